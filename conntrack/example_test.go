package conntrack_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/netip"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/vishvananda/netns"
)

// After a UDP service's backend 198.18.1.2 went away, delete the flows to
// its VIP that the remaining backend does not answer.
func Example() {
	c, err := conntrack.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	n, err := c.Delete(context.Background(), conntrack.Filter{
		Protocol: conntrack.UDP,
		Addr:     netip.MustParseAddr("198.18.100.10"),
		Port:     53,
		Keep:     []netip.AddrPort{netip.MustParseAddrPort("198.18.1.1:5353")},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("deleted", n, "stale flows")
}

// Work on another network namespace's table, for example a container's.
func ExampleNew_netns() {
	h, err := netns.GetFromPath("/run/netns/blue")
	if err != nil {
		log.Fatal(err)
	}
	c, err := conntrack.New(&conntrack.Config{NetNS: h})
	h.Close() // the Client has what it needs
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}

// Delete every UDP and SCTP flow to two frontends of different families
// (a service that lost all its backends): one table dump per family.
func ExampleClient_Delete() {
	c, err := conntrack.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var filters []conntrack.Filter
	for _, vip := range []string{"198.18.100.10", "2001:db8:100::10"} {
		for _, p := range []conntrack.Protocol{conntrack.UDP, conntrack.SCTP} {
			filters = append(filters, conntrack.Filter{Protocol: p, Addr: netip.MustParseAddr(vip), Port: 53})
		}
	}
	n, err := c.Delete(context.Background(), filters...)
	var ve *conntrack.ValidationError
	switch {
	case errors.Is(err, conntrack.ErrNotSupported):
		log.Fatal("load nf_conntrack_netlink: ", err)
	case errors.As(err, &ve):
		log.Fatalf("bad %s: %s", ve.Field, ve.Value)
	case err != nil:
		log.Fatal(err) // n flows were deleted before it
	}
	fmt.Println("deleted", n)
}
