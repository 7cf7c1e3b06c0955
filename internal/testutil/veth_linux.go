package testutil

import (
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"
)

// Veth links two test namespaces with a veth pair: aName in a with aAddr,
// bName in b with bAddr, both up. Routes are the caller's (see Route).
func Veth(tb testing.TB, a *NetNS, aName string, aAddr netip.Prefix, b *NetNS, bName string, bAddr netip.Prefix) {
	tb.Helper()
	var err error
	a.Do(tb, func() {
		err = netlink.LinkAdd(&netlink.Veth{
			LinkAttrs:     netlink.LinkAttrs{Name: aName},
			PeerName:      bName,
			PeerNamespace: netlink.NsFd(int(b.Handle())),
		})
	})
	if err != nil {
		Missing(tb, "veth links (module veth)", err)
	}
	for _, side := range []struct {
		ns   *NetNS
		name string
		addr netip.Prefix
	}{{a, aName, aAddr}, {b, bName, bAddr}} {
		side.ns.Exec(tb, "ip", "addr", "add", side.addr.String(), "dev", side.name, "nodad")
		side.ns.Do(tb, func() { err = NoDAD(side.name) })
		if err != nil {
			tb.Fatalf("%s: %v", side.name, err)
		}
		side.ns.Exec(tb, "ip", "link", "set", side.name, "up")
	}
}

// Route adds a route in ns: to dst (e.g. "default" or a prefix) via gw.
func (ns *NetNS) Route(tb testing.TB, dst string, gw netip.Addr) {
	tb.Helper()
	args := []string{"route", "add", dst, "via", gw.String()}
	if gw.Is6() {
		args = append([]string{"-6"}, args...)
	}
	ns.Exec(tb, "ip", args...)
}
