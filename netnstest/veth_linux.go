package netnstest

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Link joins a and b with a veth pair: aName in a with the address aAddr,
// bName in b with bAddr (an address and its prefix: "198.18.0.1/24"), both
// up. Duplicate address detection is off, so an IPv6 address is usable at
// once. Routes beyond the pair's prefix are the caller's (Route).
func Link(tb testing.TB, a *NS, aName string, aAddr netip.Prefix, b *NS, bName string, bAddr netip.Prefix) {
	tb.Helper()
	var err error
	a.Do(tb, func() {
		err = netlink.LinkAdd(&netlink.Veth{
			LinkAttrs: netlink.LinkAttrs{Name: aName},
			PeerName:  bName, PeerNamespace: netlink.NsFd(int(b.h)),
		})
	})
	if err != nil {
		tb.Fatalf("netnstest: veth %s-%s (module veth): %v", aName, bName, err)
	}
	a.up(tb, aName, aAddr)
	b.up(tb, bName, bAddr)
	a.waitUp(tb, aName)
	b.waitUp(tb, bName)
}

// waitUp waits until the kernel has made the link name in ns operational:
// until then (up to a second after it is set up) it drops what is sent
// through it, and a test's first connection would wait for a resend.
func (ns *NS) waitUp(tb testing.TB, name string) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var l netlink.Link
		var err error
		ns.Do(tb, func() { l, err = netlink.LinkByName(name) })
		switch {
		case err != nil:
			tb.Fatalf("netnstest: link %s: %v", name, err)
		case l.Attrs().OperState == netlink.OperUp:
			return
		case time.Now().After(deadline):
			tb.Fatalf("netnstest: link %s is still %v after 5 s", name, l.Attrs().OperState)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, with a deadline
	}
}

// up gives the link name in ns the address addr, and sets it up.
func (ns *NS) up(tb testing.TB, name string, addr netip.Prefix) {
	tb.Helper()
	var err error
	ns.Do(tb, func() {
		var l netlink.Link
		if l, err = netlink.LinkByName(name); err != nil {
			return
		}
		if addr.Addr().Is6() { // before the link is up, or its own link-local address waits a second
			if err = writeSysctl("net/ipv6/conf/"+name+"/accept_dad", "0"); err != nil {
				return
			}
		}
		a := &netlink.Addr{IPNet: prefixNet(addr), Flags: unix.IFA_F_NODAD}
		if err = netlink.AddrAdd(l, a); err != nil {
			err = fmt.Errorf("address %v: %w", addr, err)
			return
		}
		err = netlink.LinkSetUp(l)
	})
	if err != nil {
		tb.Fatalf("netnstest: link %s: %v", name, err)
	}
}

// Route adds a route inside ns to dst through the gateway via; an invalid
// (zero) dst is the default route of via's family.
func (ns *NS) Route(tb testing.TB, dst netip.Prefix, via netip.Addr) {
	tb.Helper()
	r := &netlink.Route{Gw: via.AsSlice()}
	if dst.IsValid() {
		r.Dst = prefixNet(dst.Masked())
	}
	var err error
	ns.Do(tb, func() { err = netlink.RouteAdd(r) })
	if err != nil {
		tb.Fatalf("netnstest: route to %v via %v: %v", dst, via, err)
	}
}

// Peer makes a new namespace joined to ns by a veth pair, as a client or a
// backend of a node: ns's end is named name with the address nsAddr, the
// new namespace's end is eth0 with addr, and the new namespace's default
// route goes through nsAddr, so that its replies to any address pass ns.
func (ns *NS) Peer(tb testing.TB, name string, nsAddr, addr netip.Prefix) *NS {
	tb.Helper()
	peer := New(tb)
	Link(tb, ns, name, nsAddr, peer, "eth0", addr)
	peer.Route(tb, netip.Prefix{}, nsAddr.Addr())
	return peer
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
