package proxier

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The node's own addresses in TestIntegrationNodeAddressVIP, on its "eth0"
// (a dummy link the test makes, up), apart from every client's link: the
// clients reach them through the node's routing, as a router would.
var (
	ownV4 = a("198.18.30.1")
	ownV6 = a("2001:db8:30::1")
)

// TestIntegrationNodeAddressVIP serves an external IP and a load-balancer
// IP that are the node's own addresses, beside a node port on them, on a
// node kube-proxy left with a copy of those addresses on kube-ipvs0 (as a
// kube-proxy before kubernetes#93175's fix bound them; today's binds none).
// The adopting Sync removes the copies, and binds and routes nothing of the
// node's; Reconcile finds no drift, even with copies bound again by someone
// else, and leaves them; Cleanup deletes the link with them. Through it
// all eth0 keeps its addresses and their local routes, and the node itself
// answers on them.
func TestIntegrationNodeAddressVIP(t *testing.T) {
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) { testNodeAddressVIP(t, v) })
	}
}

func testNodeAddressVIP(t *testing.T, v variant) {
	ctx := context.Background()
	tp := newTopologyIn(t, v, 1, 2)
	var err error
	tp.node.Do(t, func() {
		if err = netlink.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}}); err != nil {
			return
		}
		if err = linkUp("eth0", netip.PrefixFrom(ownV4, 24), netip.PrefixFrom(ownV6, 64)); err != nil {
			return
		}
		// kube-proxy's kube-ipvs0, down, with the copies.
		if err = netlink.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: "kube-ipvs0"}}); err != nil {
			return
		}
		err = addrsAdd("kube-ipvs0", netip.PrefixFrom(ownV4, 32), netip.PrefixFrom(ownV6, 128))
	})
	must(t, err)
	node := &host{name: "node", ns: tp.node}
	serveTCP(t, node) // the node's own service, on every address: port 8080
	c := tp.clients[0]
	eth0Routes := tp.routesVia(t, "eth0")
	reachable := func(when string) {
		t.Helper()
		tp.checkOwnAddrs(t, when)
		if got := tp.routesVia(t, "eth0"); !slices.Equal(got, eth0Routes) {
			t.Errorf("%s: eth0's routes are\n%s\nwant\n%s", when, strings.Join(got, "\n"), strings.Join(eth0Routes, "\n"))
		}
		for _, own := range []netip.Addr{ownV4, ownV6} {
			if r, err := c.tcpOnce(t, netip.AddrPortFrom(own, backendTCPPort), requestTimeout); err != nil || r.name != "node" {
				t.Errorf("%s: the node's own port 8080 on %v: %v %v, want the node to answer", when, own, r, err)
			}
		}
	}
	reachable("before the first Sync")
	if held := tp.linkHolds(t, "kube-ipvs0"); !slices.Contains(held, ownV4) || !slices.Contains(held, ownV6) {
		t.Fatalf("kube-ipvs0 holds %v, want the copies of the node's addresses", held)
	}

	k := tp.newProxier(t, Config{Backend: v.be, Families: []Family{IPv4, IPv6}, KubeProxyNames: true, AdoptKubeProxy: true})
	eps := tp.endpoints(true, true, []int{0, 1})
	s := State{
		Node: Node{Addresses: []netip.Addr{ownV4, ownV6, c.nodeV4, c.nodeV6}},
		Services: map[string]Service{
			"web": {
				ClusterIPs:  []netip.Addr{a("198.18.100.1"), a("2001:db8:100::1")},
				Ports:       []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: backendTCPPort, NodePort: 30080}},
				ExternalIPs: []netip.Addr{ownV4, ownV6},
				Endpoints:   eps,
			},
			"lb": {
				ClusterIPs:      []netip.Addr{a("198.18.100.2"), a("2001:db8:100::2")},
				Ports:           []Port{{Name: "http", Protocol: TCP, Port: 81, TargetPort: backendTCPPort}},
				LoadBalancerIPs: []netip.Addr{ownV4, ownV6},
				Endpoints:       eps,
			},
		},
	}
	res := k.mustSync(t, s)
	if held := tp.linkHolds(t, "kube-ipvs0"); slices.Contains(held, ownV4) || slices.Contains(held, ownV6) {
		t.Errorf("kube-ipvs0 still holds the node's addresses: %v (plan:\n%s)", held, res.Plan)
	}
	reachable("after the adopting Sync")
	served := func(when string) {
		t.Helper()
		for _, own := range []netip.Addr{ownV4, ownV6} {
			for _, port := range []uint16{80, 81, 30080} {
				got := map[string]bool{}
				for _, r := range c.tcp(t, netip.AddrPortFrom(own, port), 4) {
					got[r.name] = true
				}
				if !got["backend-1"] || !got["backend-2"] {
					t.Errorf("%s: %v answered by %v, want both backends", when, netip.AddrPortFrom(own, port), got)
				}
			}
		}
	}
	served("after the adopting Sync")

	rep, err := k.p.Reconcile(ctx)
	must(t, err)
	if len(rep.Drift) != 0 {
		t.Errorf("Reconcile reports drift: %v", rep.Drift)
	}
	// A restarted Proxier (no adoption now) reads the node back as its own
	// and changes nothing.
	k = tp.newProxier(t, Config{Backend: v.be, Families: []Family{IPv4, IPv6}, KubeProxyNames: true})
	res = k.mustSync(t, s)
	if n := res.Plan.IPVSAdd.Len() + res.Plan.IPVSDelete.Len() + len(res.Plan.Bind) + len(res.Plan.Unbind); n != 0 {
		t.Errorf("the restarted Proxier's Sync changed %d things:\n%s", n, res.Plan)
	}
	served("after a restart")
	// Someone binds the copies again: not the Proxier's, so not drift and
	// left; Cleanup then deletes its link with them on it.
	tp.node.Do(t, func() { err = addrsAdd("kube-ipvs0", netip.PrefixFrom(ownV4, 32), netip.PrefixFrom(ownV6, 128)) })
	must(t, err)
	rep, err = k.p.Reconcile(ctx)
	must(t, err)
	if len(rep.Drift) != 0 {
		t.Errorf("Reconcile with the copies bound again reports drift: %v", rep.Drift)
	}
	if held := tp.linkHolds(t, "kube-ipvs0"); !slices.Contains(held, ownV4) || !slices.Contains(held, ownV6) {
		t.Errorf("Reconcile removed the copies someone bound: kube-ipvs0 holds %v", held)
	}
	reachable("with the copies bound again")
	must(t, k.p.Cleanup(ctx))
	reachable("after Cleanup")
}

// addrsAdd adds host addresses to a link, without duplicate address
// detection.
func addrsAdd(name string, ps ...netip.Prefix) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: ipNet(p), Flags: unix.IFA_F_NODAD}); err != nil {
			return err
		}
	}
	return nil
}

// linkHolds returns the addresses on the node's link name and the
// destinations of the local routes through it.
func (tp *topology) linkHolds(t *testing.T, name string) []netip.Addr {
	t.Helper()
	var out []netip.Addr
	var err error
	tp.node.Do(t, func() {
		var l netlink.Link
		if l, err = netlink.LinkByName(name); err != nil {
			return
		}
		var as []netlink.Addr
		if as, err = netlink.AddrList(l, netlink.FAMILY_ALL); err != nil {
			return
		}
		for _, x := range as {
			ip, _ := netip.AddrFromSlice(x.IP)
			out = append(out, ip.Unmap())
		}
		out = append(out, localRoutes(t, l.Attrs().Index)...)
	})
	must(t, err)
	return out
}

// localRoutes are the destinations of table local's routes of type local
// through the link with index idx (call in the namespace).
func localRoutes(t *testing.T, idx int) []netip.Addr {
	t.Helper()
	rs, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_LOCAL, LinkIndex: idx},
		netlink.RT_FILTER_TABLE|netlink.RT_FILTER_OIF)
	must(t, err)
	var out []netip.Addr
	for _, r := range rs {
		if r.Type == unix.RTN_LOCAL && r.Dst != nil {
			ip, _ := netip.AddrFromSlice(r.Dst.IP)
			out = append(out, ip.Unmap())
		}
	}
	return out
}

// routesVia lists the routes of every table through the node's link name,
// sorted, but IPv6 anycast ones.
func (tp *topology) routesVia(t *testing.T, name string) []string {
	t.Helper()
	var out []string
	tp.node.Do(t, func() {
		l, err := netlink.LinkByName(name)
		must(t, err)
		rs, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{LinkIndex: l.Attrs().Index},
			netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE)
		must(t, err)
		for _, r := range rs {
			if r.Type == unix.RTN_ANYCAST {
				continue // IPv6's router anycast routes, there while forwarding is on (the proxier turns it on)
			}
			out = append(out, fmt.Sprintf("table %d type %d %v src %v", r.Table, r.Type, r.Dst, r.Src))
		}
	})
	slices.Sort(out)
	return out
}

// checkOwnAddrs fails unless eth0 holds the node's addresses and their
// local routes.
func (tp *topology) checkOwnAddrs(t *testing.T, when string) {
	t.Helper()
	var addrs, routes []netip.Addr
	tp.node.Do(t, func() {
		l, err := netlink.LinkByName("eth0")
		must(t, err)
		as, err := netlink.AddrList(l, netlink.FAMILY_ALL)
		must(t, err)
		for _, x := range as {
			ip, _ := netip.AddrFromSlice(x.IP)
			addrs = append(addrs, ip.Unmap())
		}
		routes = localRoutes(t, l.Attrs().Index)
	})
	for _, own := range []netip.Addr{ownV4, ownV6} {
		if !slices.Contains(addrs, own) || !slices.Contains(routes, own) {
			t.Errorf("%s: eth0 has addresses %v and local routes %v, want %v in both", when, addrs, routes, own)
		}
	}
}
