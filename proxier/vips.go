package proxier

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/ipvskit/ipvskit/dummy"
)

// routeLink is the VIP link client's local routes (Config.VIPMode
// VIPLocalRoutes): *dummy.Client and dummytest's fake have them.
type routeLink interface {
	// Routes lists the VIPs held as the client's local routes on the link.
	Routes(ctx context.Context, name string) ([]netip.Addr, error)
	// UpdateRoutes adds and removes such routes, idempotently, in few
	// requests.
	UpdateRoutes(ctx context.Context, name string, add, remove []netip.Addr) error
}

// vipHolder makes VIPs the node's own in one of the modes of VIPMode, on
// the VIP link. It also finds and removes the VIPs an earlier run left in
// the other mode, so that a Proxier started in a new mode takes over from
// one in the old: its own form is added first, the old one removed after
// (from addresses to routes with one round trip's gap: see removeOld).
type vipHolder interface {
	// bound returns the VIPs held on link in this mode.
	bound(ctx context.Context, link string) ([]netip.Addr, error)
	// old returns the VIPs held on link in the other mode (none if the
	// link client cannot tell). It costs a dump, so the read back asks
	// only when some VIP it owns is missing from bound's.
	old(ctx context.Context, link string) ([]netip.Addr, error)
	// update adds add and removes remove in this mode.
	update(ctx context.Context, link string, add, remove []netip.Addr) error
	// removeOld removes old, held in the other mode, and returns how
	// many address or route requests it sent (see linkOutcome).
	removeOld(ctx context.Context, link string, old []netip.Addr) (int, error)
}

// newVIPHolder returns the holder for mode over l, or an error if l lacks
// what the mode needs.
func newVIPHolder(mode VIPMode, l Link) (vipHolder, error) {
	rl, hasRoutes := l.(routeLink)
	if mode == VIPLocalRoutes {
		if !hasRoutes {
			return nil, fmt.Errorf("proxier: VIPLocalRoutes needs a Deps.Link with Routes and UpdateRoutes (such as *dummy.Client); %T has none", l)
		}
		return routeVIPs{l: l, r: rl}, nil
	}
	return addrVIPs{l: l, r: rl}, nil
}

// addrVIPs binds each VIP as a host address (VIPAddresses).
type addrVIPs struct {
	l Link
	r routeLink // nil: no routes can be left from VIPLocalRoutes
}

func (v addrVIPs) bound(ctx context.Context, link string) ([]netip.Addr, error) {
	return addrsOn(ctx, v.l, link)
}

func (v addrVIPs) old(ctx context.Context, link string) ([]netip.Addr, error) {
	if v.r == nil {
		return nil, nil
	}
	as, err := v.r.Routes(ctx, link)
	if err != nil {
		return nil, fmt.Errorf("reading the local routes left by VIPLocalRoutes: %w", err)
	}
	return as, nil
}

// addrsOn returns the addresses on link that can be VIPs (see vipOnLink).
func addrsOn(ctx context.Context, l Link, link string) ([]netip.Addr, error) {
	ps, err := l.Addrs(ctx, link)
	if err != nil {
		return nil, err
	}
	var as []netip.Addr
	for _, p := range ps {
		if vipOnLink(p) {
			as = append(as, p.Addr())
		}
	}
	return as, nil
}

func (v addrVIPs) update(ctx context.Context, link string, add, remove []netip.Addr) error {
	return v.l.Update(ctx, link, add, remove)
}

func (v addrVIPs) removeOld(ctx context.Context, link string, old []netip.Addr) (int, error) {
	if v.r == nil {
		return 0, nil
	}
	err := v.r.UpdateRoutes(ctx, link, nil, old)
	return linkOutcome(len(old), err).sent, err
}

// routeVIPs adds a local route for each VIP (VIPLocalRoutes).
type routeVIPs struct {
	l Link
	r routeLink
}

func (v routeVIPs) bound(ctx context.Context, link string) ([]netip.Addr, error) {
	return v.r.Routes(ctx, link)
}

func (v routeVIPs) old(ctx context.Context, link string) ([]netip.Addr, error) {
	as, err := addrsOn(ctx, v.l, link)
	if err != nil {
		return nil, fmt.Errorf("reading the addresses left by VIPAddresses: %w", err)
	}
	return as, nil
}

func (v routeVIPs) update(ctx context.Context, link string, add, remove []netip.Addr) error {
	return v.r.UpdateRoutes(ctx, link, add, remove)
}

// removeOld removes the addresses an earlier run bound. The kernel
// flushes every IPv4 route out of a link that loses its last IPv4 address
// (net/ipv4/fib_frontend.c: fib_inetaddr_event calls fib_disable_ip), the
// local routes just added included, so those the link held before are
// added again at once: the VIPs go without a route for that one round
// trip (seen in TestIntegrationSwitchingBackEnds).
func (v routeVIPs) removeOld(ctx context.Context, link string, old []netip.Addr) (int, error) {
	held, err := v.r.Routes(ctx, link)
	if err != nil {
		return 0, err
	}
	err = v.l.Update(ctx, link, nil, old)
	n := linkOutcome(len(old), err).sent
	if err != nil {
		return n, err
	}
	err = v.r.UpdateRoutes(ctx, link, held, nil)
	return n + linkOutcome(len(held), err).sent, err
}

// vipObject names how a VIP is held on link in mode, for drift reports.
func vipObject(mode VIPMode, a netip.Addr, link string) string {
	if mode == VIPLocalRoutes {
		return "route local " + a.String() + " on " + link
	}
	return "address " + a.String() + " on " + link
}

// vipCommand is the ip(8) command that adds (or deletes) VIP a on link in
// mode, for Plan.String.
func vipCommand(mode VIPMode, add bool, a netip.Addr, link string) string {
	verb := "del"
	if add {
		verb = "add"
	}
	p := netip.PrefixFrom(a, a.BitLen())
	if mode == VIPLocalRoutes {
		return fmt.Sprintf("ip route %s local %s dev %s table local proto %d scope host", verb, p, link, dummy.RouteProtocol)
	}
	return fmt.Sprintf("ip addr %s %s dev %s", verb, p, link)
}
