//go:build linux

package dummy_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/dummy/internal/contract"
	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/vishvananda/netlink"
)

// newClient returns a Client working in ns, closed at cleanup.
func newClient(t *testing.T, ns *testutil.NetNS) *dummy.Client {
	t.Helper()
	c, err := dummy.New(&dummy.Config{NetNS: ns.Handle()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ipAddrs reads a link's addresses with ip(8), the independent oracle.
func ipAddrs(t *testing.T, ns *testutil.NetNS, name string) ([]netip.Prefix, bool) {
	t.Helper()
	out, err := ns.TryExec(t, nil, "ip", "-j", "addr", "show", "dev", name)
	if err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return nil, false
		}
		t.Fatalf("ip addr show dev %s: %v", name, err)
	}
	var links []struct {
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) != 1 {
		t.Fatalf("ip -j addr show dev %s: %v: %q", name, err, out)
	}
	var ps []netip.Prefix
	for _, ai := range links[0].AddrInfo {
		ps = append(ps, netip.PrefixFrom(netip.MustParseAddr(ai.Local), ai.PrefixLen))
	}
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return ps, true
}

func world(t *testing.T, ns *testutil.NetNS) contract.World {
	return contract.World{
		Links: newClient(t, ns),
		Foreign: func(t *testing.T, name string) {
			ns.Exec(t, "ip", "link", "add", name, "type", "bridge")
		},
		ForeignDummy: func(t *testing.T, name, alias string) {
			if alias == "" {
				ns.Exec(t, "ip", "link", "add", name, "type", "dummy")
				return
			}
			// The kernel ignores an alias given with "add".
			ns.Exec(t, "ip", "link", "add", name, "type", "dummy")
			ns.Exec(t, "ip", "link", "set", name, "alias", alias)
		},
		AddAddr: func(t *testing.T, name string, p netip.Prefix) {
			ns.Exec(t, "ip", "addr", "add", p.String(), "dev", name)
		},
		Oracle: func(t *testing.T, name string) ([]netip.Prefix, bool) { return ipAddrs(t, ns, name) },
		AddRoute: func(t *testing.T, name string, addr netip.Addr, proto uint8) {
			verb := "append" // beside routes for the same address (ip route add is exclusive)
			if addr.Is6() {
				// The kernel takes no IPv6 route out of a down link.
				ns.Exec(t, "ip", "link", "set", name, "up")
				verb = "add"
			}
			ns.Exec(t, "ip", "route", verb, "local", addr.String(), "dev", name, "table", "local",
				"proto", strconv.Itoa(int(proto)), "scope", "host")
		},
		RouteOracle: func(t *testing.T, name string) []contract.Route { return ipLocalRoutes(t, ns, name) },
	}
}

// ipLocalRoutes reads, with ip(8), the host routes of type local in the
// local table out of link name, both families, with their protocol
// numbers, sorted; none if there is no such link.
func ipLocalRoutes(t *testing.T, ns *testutil.NetNS, name string) []contract.Route {
	t.Helper()
	var out []contract.Route
	for _, fam := range []string{"-4", "-6"} {
		js, err := ns.TryExec(t, nil, "ip", "-N", "-j", fam, "route", "show", "table", "local", "type", "local", "dev", name)
		if err != nil {
			if strings.Contains(err.Error(), "Cannot find device") {
				return nil
			}
			t.Fatalf("ip route show table local dev %s: %v", name, err)
		}
		var rs []struct {
			Dst      string          `json:"dst"`
			Protocol json.RawMessage `json:"protocol"`
		}
		if err := json.Unmarshal([]byte(js), &rs); err != nil {
			t.Fatalf("ip -N -j route show: %v: %q", err, js)
		}
		for _, r := range rs {
			a, err := netip.ParseAddr(r.Dst)
			if err != nil || a.IsLinkLocalUnicast() {
				continue // a prefix, or the kernel's own link-local address
			}
			proto, err := strconv.Atoi(strings.Trim(string(r.Protocol), `"`))
			if err != nil {
				t.Fatalf("ip -N -j route show: protocol %s of %s", r.Protocol, r.Dst)
			}
			out = append(out, contract.Route{Addr: a, Protocol: uint8(proto)})
		}
	}
	slices.SortFunc(out, func(x, y contract.Route) int {
		if c := x.Addr.Compare(y.Addr); c != 0 {
			return c
		}
		return int(x.Protocol) - int(y.Protocol)
	})
	return out
}

// The Client against the kernel meets the expectations the fake meets too,
// each in a fresh namespace.
func TestIntegrationContract(t *testing.T) {
	contract.Run(t, func(t *testing.T) contract.World {
		ns := testutil.NewNetNS(t)
		testutil.RequireDummy(t, ns)
		return world(t, ns)
	})
}

// Ensure makes a dummy link that is down and NOARP, as kube-ipvs0 is. On a
// kernel without dummy links, the error says so and names the module.
func TestIntegrationEnsureMakesADownNOARPDummy(t *testing.T) {
	ns := testutil.NewNetNS(t)
	c := newClient(t, ns)
	created, err := c.Ensure(context.Background(), "kube-ipvs0")
	if errors.Is(err, dummy.ErrNotSupported) {
		if !strings.Contains(err.Error(), "module dummy") {
			t.Errorf("the not-supported error does not name the module: %v", err)
		}
		if _, ok := ipAddrs(t, ns, "kube-ipvs0"); ok {
			t.Error("a failed Ensure left a link behind")
		}
		testutil.Missing(t, "dummy links (module dummy)", err)
	}
	if err != nil || !created {
		t.Fatalf("Ensure = %v, %v; want true, nil", created, err)
	}
	out := ns.Exec(t, "ip", "-d", "-j", "link", "show", "dev", "kube-ipvs0")
	var links []struct {
		Flags     []string `json:"flags"`
		OperState string   `json:"operstate"`
		LinkInfo  struct {
			Kind string `json:"info_kind"`
		} `json:"linkinfo"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) != 1 {
		t.Fatalf("ip -d -j link show: %v: %q", err, out)
	}
	l := links[0]
	if l.LinkInfo.Kind != "dummy" || !slices.Contains(l.Flags, "NOARP") || slices.Contains(l.Flags, "UP") || l.OperState != "DOWN" {
		t.Fatalf("link = kind %q flags %v state %s; want a dummy, NOARP, not UP, DOWN", l.LinkInfo.Kind, l.Flags, l.OperState)
	}

	// An existing dummy link is accepted as it is, even up.
	ns.Exec(t, "ip", "link", "set", "kube-ipvs0", "up")
	if created, err := c.Ensure(context.Background(), "kube-ipvs0"); err != nil || created {
		t.Fatalf("Ensure of an existing link = %v, %v; want false, nil", created, err)
	}
	if out := ns.Exec(t, "ip", "-j", "link", "show", "dev", "kube-ipvs0"); !strings.Contains(out, `"UP"`) {
		t.Fatalf("Ensure changed an existing link's flags: %s", out)
	}
	// While up, the kernel's IPv6 link-local address is left alone by Sync.
	if _, err := c.Sync(context.Background(), "kube-ipvs0", []netip.Addr{netip.MustParseAddr("2001:db8::7")}); err != nil {
		t.Fatal(err)
	}
	ps, _ := ipAddrs(t, ns, "kube-ipvs0")
	if !slices.Contains(ps, netip.MustParsePrefix("2001:db8::7/128")) {
		t.Fatalf("addresses after Sync: %v", ps)
	}
	for _, p := range ps {
		if p.Addr().IsLinkLocalUnicast() {
			return
		}
	}
	t.Logf("no IPv6 link-local address appeared on the up link (addresses %v); nothing to leave alone", ps)
}

// A link of another type is never touched, and this holds on any kernel (it
// needs no dummy link type): every method refuses it and it keeps its
// address.
func TestIntegrationForeignLinkIsNotTakenOver(t *testing.T) {
	ns := testutil.NewNetNS(t)
	c := newClient(t, ns)
	ctx := context.Background()
	ns.Exec(t, "ip", "link", "add", "kube-ipvs0", "type", "bridge")
	ns.Exec(t, "ip", "addr", "add", "198.18.9.1/24", "dev", "kube-ipvs0")
	theirs := []netip.Prefix{netip.MustParsePrefix("198.18.9.1/24")}

	check := func(op string, err error) {
		t.Helper()
		var le *dummy.LinkTypeError
		if !errors.As(err, &le) || le.Type != "bridge" || le.Name != "kube-ipvs0" || !errors.Is(err, fs.ErrExist) {
			t.Errorf("%s on a bridge: %v; want a *LinkTypeError naming kube-ipvs0 and bridge", op, err)
		}
	}
	_, err := c.Ensure(ctx, "kube-ipvs0")
	check("Ensure", err)
	_, err = c.Addrs(ctx, "kube-ipvs0")
	check("Addrs", err)
	check("Bind", c.Bind(ctx, "kube-ipvs0", netip.MustParseAddr("198.18.0.1")))
	check("Unbind", c.Unbind(ctx, "kube-ipvs0", netip.MustParseAddr("198.18.9.1")))
	_, err = c.Sync(ctx, "kube-ipvs0", nil)
	check("Sync", err)
	check("Delete", c.Delete(ctx, "kube-ipvs0"))

	got, ok := ipAddrs(t, ns, "kube-ipvs0")
	if !ok || !slices.Equal(got, theirs) {
		t.Fatalf("the bridge now has %v (exists: %v); want it untouched with %v", got, ok, theirs)
	}
	if out := ns.Exec(t, "ip", "-d", "link", "show", "dev", "kube-ipvs0"); !strings.Contains(out, "bridge") {
		t.Fatalf("the link is no longer a bridge:\n%s", out)
	}
}

// Calls from many goroutines are serialised and all take effect.
func TestIntegrationConcurrentBinds(t *testing.T) {
	ns := testutil.NewNetNS(t)
	testutil.RequireDummy(t, ns)
	c := newClient(t, ns)
	ctx := context.Background()
	if _, err := c.Ensure(ctx, "vips0"); err != nil {
		t.Fatal(err)
	}
	var want []netip.Prefix
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		a := netip.AddrFrom4([4]byte{198, 18, 1, byte(i + 1)})
		want = append(want, netip.PrefixFrom(a, 32))
		wg.Go(func() { errs <- c.Bind(ctx, "vips0", a) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, _ := ipAddrs(t, ns, "vips0")
	if !slices.Equal(got, want) {
		t.Fatalf("after 64 concurrent Binds, ip shows %d addresses: %v", len(got), got)
	}
}

// A context whose deadline has passed stops a call before it reaches the
// kernel; Close makes later calls fail with fs.ErrClosed.
func TestIntegrationDeadlineAndClose(t *testing.T) {
	ns := testutil.NewNetNS(t)
	c := newClient(t, ns)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := c.Ensure(ctx, "vips0"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ensure past the deadline: %v; want context.DeadlineExceeded", err)
	}
	if _, ok := ipAddrs(t, ns, "vips0"); ok {
		t.Fatal("Ensure past its deadline made the link")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Addrs(context.Background(), "lo"); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("Addrs after Close: %v; want fs.ErrClosed", err)
	}
	if err := c.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("second Close: %v; want fs.ErrClosed", err)
	}
}

func hostHasLink(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}

// A VIP bound on the dummy link, as an address (Bind) or as a local route
// (UpdateRoutes), is the node namespace's own: a TCP listener on it accepts
// a connection that comes from another namespace over a veth pair, and one
// from the node itself, and without the binding nothing can listen on it.
// The node's own connection comes from the VIP, except for an IPv6 VIP held
// as a route: IPv6 picks a source among addresses, and the VIP is none.
func TestIntegrationVIPIsAnsweredLocally(t *testing.T) {
	for _, mode := range []string{"Address", "Route"} {
		t.Run(mode, func(t *testing.T) { testVIPIsAnsweredLocally(t, mode == "Route") })
	}
}

func testVIPIsAnsweredLocally(t *testing.T, route bool) {
	for _, tc := range []struct {
		family, ipFlag     string
		vip, nodeIP, peer  string
		nodeNet, clientNet string
	}{
		{"IPv4", "-4", "198.18.0.100", "198.18.1.1", "198.18.1.2", "198.18.1.1/30", "198.18.1.2/30"},
		{"IPv6", "-6", "2001:db8::100", "2001:db8:1::1", "2001:db8:1::2", "2001:db8:1::1/64", "2001:db8:1::2/64"},
	} {
		t.Run(tc.family, func(t *testing.T) {
			hostHad := hostHasLink("kube-ipvs0")
			node, client := testutil.NewNetNS(t), testutil.NewNetNS(t)
			testutil.RequireDummy(t, node)
			c := newClient(t, node)
			ctx := context.Background()
			vip := netip.MustParseAddr(tc.vip)
			vipPort := netip.AddrPortFrom(vip, 8080).String()

			// node [veth-n] <-> [veth-c] client, client routes the VIP to node.
			var err error
			node.Do(t, func() {
				err = netlink.LinkAdd(&netlink.Veth{
					LinkAttrs:     netlink.LinkAttrs{Name: "veth-n"},
					PeerName:      "veth-c",
					PeerNamespace: netlink.NsFd(int(client.Handle())),
				})
			})
			if err != nil {
				t.Fatalf("making the veth pair: %v", err)
			}
			node.Exec(t, "ip", "addr", "add", tc.nodeNet, "dev", "veth-n", "nodad")
			node.Exec(t, "ip", "link", "set", "veth-n", "up")
			client.Exec(t, "ip", "addr", "add", tc.clientNet, "dev", "veth-c", "nodad")
			client.Exec(t, "ip", "link", "set", "veth-c", "up")
			client.Exec(t, "ip", "route", "add", tc.vip, "via", tc.nodeIP)

			listen := func() (net.Listener, error) {
				var ln net.Listener
				var err error
				node.Do(t, func() { ln, err = net.Listen("tcp", vipPort) })
				return ln, err
			}
			if ln, err := listen(); err == nil {
				ln.Close()
				t.Fatalf("could listen on %s before binding it", vipPort)
			}

			if _, err := c.Ensure(ctx, "kube-ipvs0"); err != nil {
				t.Fatal(err)
			}
			bind, unbind := func() error { return c.Bind(ctx, "kube-ipvs0", vip) }, func() error { return c.Unbind(ctx, "kube-ipvs0", vip) }
			if route {
				bind = func() error { return c.UpdateRoutes(ctx, "kube-ipvs0", []netip.Addr{vip}, nil) }
				unbind = func() error { return c.UpdateRoutes(ctx, "kube-ipvs0", nil, []netip.Addr{vip}) }
			}
			if err := bind(); err != nil {
				t.Fatal(err)
			}
			if out := node.Exec(t, "ip", tc.ipFlag, "route", "show", "table", "local", "type", "local", "dev", "kube-ipvs0"); !strings.Contains(out, tc.vip) {
				t.Fatalf("no local route for %s on kube-ipvs0:\n%s", tc.vip, out)
			}
			ln, err := listen()
			if route && vip.Is6() {
				// IPv6 binds a socket only to an address (inet6_bind asks
				// for one, where IPv4 takes any local destination): the
				// VIP is delivered locally, to a wildcard listener.
				if err == nil {
					ln.Close()
					t.Fatalf("could listen on %s held as a route; IPv6 should refuse that", vipPort)
				}
				node.Do(t, func() { ln, err = net.Listen("tcp6", "[::]:8080") })
			}
			if err != nil {
				t.Fatalf("listening on the bound VIP: %v", err)
			}
			defer ln.Close()

			// The bound only keeps a broken test from hanging.
			dctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			var conn net.Conn
			client.Do(t, func() {
				var d net.Dialer
				conn, err = d.DialContext(dctx, "tcp", vipPort)
			})
			if err != nil {
				t.Fatalf("connecting from the other namespace: %v", err)
			}
			defer conn.Close()
			// The handshake is done, so the connection waits in the backlog.
			srv, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			if got := srv.RemoteAddr().(*net.TCPAddr).AddrPort().Addr(); got.String() != tc.peer {
				t.Fatalf("accepted a connection from %v; want %s", got, tc.peer)
			}
			if _, err := conn.Write([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 4)
			if _, err := io.ReadFull(srv, buf); err != nil || string(buf) != "ping" {
				t.Fatalf("read %q, %v; want ping", buf, err)
			}

			// The node's own connection to the VIP.
			var local net.Conn
			node.Do(t, func() {
				var d net.Dialer
				local, err = d.DialContext(dctx, "tcp", vipPort)
			})
			if err != nil {
				t.Fatalf("connecting from the node itself: %v", err)
			}
			defer local.Close()
			lsrv, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer lsrv.Close()
			wantSrc := vip
			if route && vip.Is6() {
				wantSrc = netip.MustParseAddr(tc.nodeIP)
			}
			if got := lsrv.RemoteAddr().(*net.TCPAddr).AddrPort().Addr(); got != wantSrc {
				t.Errorf("the node's own connection came from %v; want %v", got, wantSrc)
			}
			ln.Close()

			if err := unbind(); err != nil {
				t.Fatal(err)
			}
			if ln, err := listen(); err == nil {
				ln.Close()
				t.Fatalf("could still listen on %s after unbinding it", vipPort)
			}
			if hostHasLink("kube-ipvs0") != hostHad {
				t.Fatal("the test changed the links of the machine's own namespace")
			}
		})
	}
}

// Ensure makes the link marked (its alias), down and NOARP, under its own
// name, leaving no temporary link behind; a Client with another mark
// (another program embedding ipvskit) refuses it and changes nothing, and
// makes its own link beside it.
func TestIntegrationEnsureMarksTheLink(t *testing.T) {
	ns := testutil.NewNetNS(t)
	testutil.RequireDummy(t, ns)
	ctx := context.Background()
	c := newClient(t, ns)
	if created, err := c.Ensure(ctx, "vip0"); err != nil || !created {
		t.Fatalf("Ensure: %v, %v", created, err)
	}
	out := ns.Exec(t, "ip", "-d", "link", "show")
	if !strings.Contains(out, "vip0: <BROADCAST,NOARP>") || !strings.Contains(out, "alias "+dummy.DefaultOwner) {
		t.Errorf("ip -d link show after Ensure:\n%s", out)
	}
	if strings.Contains(out, "ipvskit-") {
		t.Errorf("a temporary link is left:\n%s", out)
	}
	other, err := dummy.New(&dummy.Config{NetNS: ns.Handle(), Owner: "ipvskit:other"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var fe *dummy.ForeignError
	if _, err := other.Ensure(ctx, "vip0"); !errors.As(err, &fe) || fe.Alias != dummy.DefaultOwner {
		t.Fatalf("Ensure by another owner: %v, want a *ForeignError", err)
	}
	if err := other.Delete(ctx, "vip0"); !errors.As(err, &fe) {
		t.Fatalf("Delete by another owner: %v, want a *ForeignError", err)
	}
	if created, err := other.Ensure(ctx, "vip1"); err != nil || !created {
		t.Fatalf("the other owner's Ensure of its own link: %v, %v", created, err)
	}
	if err := c.Delete(ctx, "vip0"); err != nil {
		t.Fatal(err)
	}
	if out := ns.Exec(t, "ip", "-d", "link", "show", "vip1"); !strings.Contains(out, "alias ipvskit:other") {
		t.Errorf("the other owner's link after our Delete:\n%s", out)
	}
}
