//go:build linux

package dummy_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/dummy/internal/contract"
	"github.com/ipvskit/ipvskit/internal/testutil"
)

// vipRange returns n IPv4 addresses from 198.18.128.1 on and m IPv6 ones
// from 2001:db8:5::1 on.
func vipRange(n, m int) []netip.Addr {
	var as []netip.Addr
	for i := range n {
		as = append(as, netip.AddrFrom4([4]byte{198, 18, byte(128 + (i+1)/256), byte((i + 1) % 256)}))
	}
	for i := range m {
		b := netip.MustParseAddr("2001:db8:5::").As16()
		b[14], b[15] = byte((i+1)>>8), byte(i+1)
		as = append(as, netip.AddrFrom16(b))
	}
	return as
}

// UpdateRoutes adds and removes thousands of routes in one call each, both
// families, idempotently, as ip(8) sees them; another program's routes (out
// of an unmarked dummy link, even with our protocol number; of our protocol
// out of our link but in the main table or another table, or of another
// type) are neither listed nor touched.
func TestIntegrationUpdateRoutesBatch(t *testing.T) {
	ns := testutil.NewNetNS(t)
	testutil.RequireDummy(t, ns)
	c := newClient(t, ns)
	ctx := context.Background()
	if _, err := c.Ensure(ctx, "vips0"); err != nil {
		t.Fatal(err)
	}
	vips := vipRange(4000, 1000)
	proto := fmt.Sprint(dummy.RouteProtocol)

	// Theirs, first.
	ns.Exec(t, "ip", "link", "add", "vips1", "type", "dummy")
	ns.Exec(t, "ip", "link", "set", "vips1", "up")
	for _, a := range []netip.Addr{vips[0], vips[1], vips[4000], vips[4999]} {
		ns.Exec(t, "ip", "route", "add", "local", a.String(), "dev", "vips1", "table", "local", "proto", proto)
	}
	if err := c.UpdateRoutes(ctx, "vips0", vips[4000:4001], nil); err != nil {
		t.Fatal(err) // sets vips0 up (IPv6), so that routes of other kinds can go out of it
	}
	ns.Exec(t, "ip", "route", "add", "198.18.50.0/24", "dev", "vips0", "proto", proto)
	ns.Exec(t, "ip", "route", "add", "local", vips[2].String(), "dev", "vips0", "table", "100", "proto", proto)
	ns.Exec(t, "ip", "route", "add", "blackhole", "198.18.60.1", "table", "local", "proto", proto)
	theirs := func() string {
		var b strings.Builder
		for _, l := range strings.Split(ns.Exec(t, "sh", "-c", "ip -4 route show table all; ip -6 route show table all"), "\n") {
			if !(strings.Contains(l, " dev vips0 ") && strings.HasPrefix(l, "local ") && strings.Contains(l, "table local proto "+proto+" ")) &&
				!strings.Contains(l, "fe80::") && !strings.HasPrefix(l, "multicast ") {
				b.WriteString(l + "\n")
			}
		}
		return b.String()
	}
	before := theirs()
	if !strings.Contains(before, "dev vips1") || !strings.Contains(before, "198.18.50.0/24 dev vips0") {
		t.Fatalf("the neighbour's routes were not made:\n%s", before)
	}

	check := func(want []netip.Addr) {
		t.Helper()
		got, err := c.Routes(ctx, "vips0")
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("Routes: %d addresses, %v; want %d", len(got), err, len(want))
		}
		var wantR []contract.Route
		for _, a := range want {
			wantR = append(wantR, contract.Route{Addr: a, Protocol: dummy.RouteProtocol})
		}
		if gotR := ipLocalRoutes(t, ns, "vips0"); !slices.Equal(gotR, wantR) {
			t.Fatalf("ip route show table local dev vips0: %d routes, want %d", len(gotR), len(wantR))
		}
	}
	if err := c.UpdateRoutes(ctx, "vips0", vips, nil); err != nil {
		t.Fatal(err)
	}
	check(vips)
	if err := c.UpdateRoutes(ctx, "vips0", vips, nil); err != nil {
		t.Fatalf("adding them again: %v", err)
	}
	// Remove every other one, and some that are not there.
	var keep, drop []netip.Addr
	for i, a := range vips {
		if i%2 == 0 {
			keep = append(keep, a)
		} else {
			drop = append(drop, a)
		}
	}
	if err := c.UpdateRoutes(ctx, "vips0", nil, append(drop, vipRange(0, 2000)[1000:]...)); err != nil {
		t.Fatal(err)
	}
	check(keep)
	if err := c.UpdateRoutes(ctx, "vips0", nil, vips); err != nil {
		t.Fatal(err)
	}
	check(nil)
	if after := theirs(); after != before {
		t.Errorf("the neighbour's routes changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// A link someone sets down keeps its IPv4 local routes and loses its IPv6
// ones (the kernel's doing); UpdateRoutes sets it up again and puts them
// back. Deleting the link takes them all.
func TestIntegrationRoutesOnALinkSetDown(t *testing.T) {
	ns := testutil.NewNetNS(t)
	testutil.RequireDummy(t, ns)
	c := newClient(t, ns)
	ctx := context.Background()
	if _, err := c.Ensure(ctx, "vips0"); err != nil {
		t.Fatal(err)
	}
	vips := vipRange(3, 3)
	if err := c.UpdateRoutes(ctx, "vips0", vips[:3], nil); err != nil {
		t.Fatal(err)
	}
	if out := ns.Exec(t, "ip", "-o", "link", "show", "vips0"); strings.Contains(out, ",UP") {
		t.Fatalf("IPv4 routes set the link up: %s", out)
	}
	if err := c.UpdateRoutes(ctx, "vips0", vips, nil); err != nil {
		t.Fatal(err)
	}
	ns.Exec(t, "ip", "link", "set", "vips0", "down")
	if got, err := c.Routes(ctx, "vips0"); err != nil || !slices.Equal(got, vips[:3]) {
		t.Fatalf("after the link went down: %v, %v; want the IPv4 ones %v", got, err, vips[:3])
	}
	if err := c.UpdateRoutes(ctx, "vips0", vips, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Routes(ctx, "vips0"); err != nil || !slices.Equal(got, vips) {
		t.Fatalf("added again: %v, %v; want %v", got, err, vips)
	}
	if err := c.Delete(ctx, "vips0"); err != nil {
		t.Fatal(err)
	}
	if out := ns.Exec(t, "sh", "-c", "ip -4 route show table local proto 173; ip -6 route show table local proto 173"); strings.TrimSpace(out) != "" {
		t.Fatalf("routes left after the link was deleted:\n%s", out)
	}
}
