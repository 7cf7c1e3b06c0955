package conntracktest_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/conntrack/conntracktest"
)

// A unit test seeds the table, runs the code under test against the Fake
// (here, one Delete), and looks at what is left.
func Example() {
	f := conntracktest.New()
	client := netip.MustParseAddrPort("198.18.20.2:40000")
	_ = f.Add(conntrack.Flow{
		Protocol: conntrack.UDP,
		Original: conntrack.Tuple{Src: client, Dst: netip.MustParseAddrPort("198.18.100.1:53")},
		Reply:    conntrack.Tuple{Src: netip.MustParseAddrPort("198.18.11.2:5353"), Dst: client},
	})
	n, err := f.Delete(context.Background(), conntrack.Filter{
		Protocol: conntrack.UDP,
		Addr:     netip.MustParseAddr("198.18.100.1"),
		Port:     53,
		Keep:     []netip.AddrPort{netip.MustParseAddrPort("198.18.12.2:5353")},
	})
	fmt.Println(n, err, f.Dumps())
	fmt.Print(f.Dump())
	// Output:
	// 1 <nil> 1
}
