package inet_test

import (
	"fmt"
	"net/netip"

	"github.com/ipvskit/ipvskit/inet"
)

func ExampleFamilyOf() {
	for _, s := range []string{"198.18.0.1", "2001:db8::1"} {
		f := inet.FamilyOf(netip.MustParseAddr(s))
		fmt.Println(s, f, f.Bits())
	}
	// Output:
	// 198.18.0.1 IPv4 32
	// 2001:db8::1 IPv6 128
}

func ExampleParseProtocol() {
	p, err := inet.ParseProtocol("UDP") // as a Kubernetes Service writes it
	fmt.Println(p, uint8(p), err)
	// Output: udp 17 <nil>
}
