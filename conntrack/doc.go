// Package conntrack deletes entries of the kernel's connection tracking
// table (netfilter conntrack) over ctnetlink, the netfilter netlink
// subsystem NFNL_SUBSYS_CTNETLINK, in a network namespace chosen once. It
// never runs the conntrack program.
//
// A proxy needs it for datagram services: a UDP client that keeps sending
// from one socket keeps one conntrack entry alive, and with it the choice
// of backend made for its first packet, long after that backend is gone.
// Deleting the entry lets the next packet be balanced afresh.
//
// A Filter names a protocol, the original destination (a frontend such as
// a VIP and port) and the reply sources to keep (the frontend's live
// backends). Delete lists the table once per address family and deletes
// every entry that matches a filter, many requests to a netlink send:
//
//	c, err := conntrack.New(nil) // this namespace; Config.NetNS for another
//	if err != nil {
//		return err
//	}
//	defer c.Close()
//	// UDP flows to 198.18.100.10:53 that are not answered by 198.18.1.1:5353.
//	n, err := c.Delete(ctx, conntrack.Filter{
//		Protocol: conntrack.UDP,
//		Addr:     netip.MustParseAddr("198.18.100.10"),
//		Port:     53,
//		Keep:     []netip.AddrPort{netip.MustParseAddrPort("198.18.1.1:5353")},
//	})
//	if err != nil {
//		return err
//	}
//	fmt.Println("deleted", n, "stale flows")
//
// Filters are validated before anything is sent (a *ValidationError names
// the field); kernel failures are an *Error that wraps the errno, and
// ErrNotSupported when the kernel lacks ctnetlink (module
// nf_conntrack_netlink). Package conntracktest has a Fake with the same
// semantics for unit tests of code that deletes flows.
//
// Why not vishvananda/netlink's ConntrackDeleteFilters: it takes no context,
// keeps the whole dump in memory and parses every attribute of every entry,
// and sends one delete per round trip, each waiting for its ack. Here the
// dump is decoded as it streams (only the tuples are read), the deletes go
// out up to a thousand to a send with one ack, and each carries the entry's
// id, so a new flow that reused a tuple since the dump is not deleted.
package conntrack
