package ipsettest_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/ipvskit/ipvskit/ipset"
	"github.com/ipvskit/ipvskit/ipset/ipsettest"
)

// Code under test takes the small interface it needs; the test hands it a
// Fake and checks the result in `ipset save` format.
func ExampleFake() {
	ctx := context.Background()
	f := ipsettest.New()
	var sets interface {
		Replace(ctx context.Context, s ipset.Set, entries []ipset.Entry) error
	} = f

	err := sets.Replace(ctx, ipset.Set{Name: "KUBE-CLUSTER-IP", Type: ipset.HashIPPort}, []ipset.Entry{
		{IP: netip.MustParseAddr("198.18.0.10"), Proto: ipset.UDP, Port: 53},
	})
	if err != nil {
		fmt.Println(err)
	}
	fmt.Print(f.Dump())
	// Output:
	// create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536
	// add KUBE-CLUSTER-IP 198.18.0.10,udp:53
}
