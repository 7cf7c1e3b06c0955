// Package dummy manages the dummy link that holds a service proxy's virtual
// IPs (VIPs), as kube-proxy's IPVS mode does with kube-ipvs0.
//
// Binding an address to a dummy link makes the kernel add a local route for
// it, so the node accepts traffic to the VIP, which IPVS then intercepts.
// The link stays down and has ARP off: it never sends anything, and the
// kernel still answers for the addresses on it locally. (Whether the node
// answers ARP for them on its other interfaces is the arp_ignore and
// arp_announce sysctls' business; see package sysctl.)
//
// A Client works in one network namespace, chosen when it is made, over
// rtnetlink; it runs no programs. It changes only the dummy links it made,
// proven by its mark (Config.Owner) in the link's alias, and only the
// addresses on them. A link of the
// asked-for name that is not a dummy link (*LinkTypeError), or a dummy link
// without the mark (*ForeignError), is never modified or deleted: every
// method fails on it, changing nothing. Addresses on other links are never
// read for Sync, nor touched.
//
// Instead of addresses, a Client can hold VIPs as local routes out of its
// link (UpdateRoutes, Routes): the kernel delivers them locally all the
// same, and adding a route costs the same however many there are, where
// binding an IPv4 address walks the link's address list. Its routes carry
// the protocol number RouteProtocol (173) on top of the link's mark; no
// other route is ever listed or removed.
//
// One rtnetlink socket serves a Client (internal/nlconn, with
// internal/nlattr's attribute codec), for the link itself (RTM_NEWLINK of
// kind dummy, RTM_GETLINK, RTM_SETLINK for alias, name and NOARP,
// RTM_DELLINK), the addresses (RTM_NEWADDR, RTM_DELADDR, RTM_GETADDR
// dumps), the batched paths (Update, UpdateRoutes) and the route list. The
// messages are built and read in files that build on every GOOS
// (link_wire.go, addr_wire.go, route_wire.go); only the socket is
// Linux-only.
//
// Package dummytest has an in-memory Fake with the same semantics and
// errors, for unit tests.
//
// # Example
//
// Keep the VIPs of a node on kube-ipvs0:
//
//	c, err := dummy.New(nil) // the current network namespace
//	if err != nil {
//		return err
//	}
//	defer c.Close()
//
//	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
//	defer cancel()
//	if _, err := c.Ensure(ctx, "kube-ipvs0"); err != nil {
//		// errors.Is(err, dummy.ErrNotSupported): no dummy module.
//		// errors.As(err, new(*dummy.LinkTypeError)): the name is taken.
//		return err
//	}
//	res, err := c.Sync(ctx, "kube-ipvs0", []netip.Addr{
//		netip.MustParseAddr("198.18.0.10"),
//		netip.MustParseAddr("2001:db8::10"),
//	})
//	if err != nil {
//		return err
//	}
//	fmt.Println("bound", res.Added, "unbound", res.Removed)
package dummy
