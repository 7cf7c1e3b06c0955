// Package contract holds the expectations that dummy.Client (against a
// kernel) and dummytest.Fake (in memory) must both meet, so that the fake
// keeps the real thing's semantics and errors.
package contract

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"slices"
	"testing"

	"github.com/ipvskit/ipvskit/dummy"
)

// Links is the method set both implementations share.
type Links interface {
	Ensure(ctx context.Context, name string) (bool, error)
	Addrs(ctx context.Context, name string) ([]netip.Prefix, error)
	Bind(ctx context.Context, name string, addr netip.Addr) error
	Unbind(ctx context.Context, name string, addr netip.Addr) error
	Sync(ctx context.Context, name string, wanted []netip.Addr) (dummy.SyncResult, error)
	Update(ctx context.Context, name string, add, remove []netip.Addr) error
	Delete(ctx context.Context, name string) error
	Adopt(ctx context.Context, name string) error
	AdoptableAddrs(ctx context.Context, name string) ([]netip.Prefix, error)
	Routes(ctx context.Context, name string) ([]netip.Addr, error)
	UpdateRoutes(ctx context.Context, name string, add, remove []netip.Addr) error
}

// Route is a local route (table local, type local) out of a link: its
// address and protocol number.
type Route struct {
	Addr     netip.Addr
	Protocol uint8
}

// World is one fresh, empty place (a network namespace, a fake) with an
// implementation working in it, and ways for a test to do what other
// programs do there.
type World struct {
	Links Links
	// Foreign makes a link called name that is a bridge, not a dummy.
	Foreign func(t *testing.T, name string)
	// ForeignDummy makes a dummy link called name with alias (none if
	// empty), as another program would.
	ForeignDummy func(t *testing.T, name, alias string)
	// AddAddr adds p to link name behind the implementation's back.
	AddAddr func(t *testing.T, name string, p netip.Prefix)
	// Oracle reads link name's addresses independently of Links (with
	// ip(8) for the kernel), sorted; ok is false if there is no such link.
	Oracle func(t *testing.T, name string) (ps []netip.Prefix, ok bool)
	// AddRoute adds a local route for addr (table local) with protocol
	// proto out of link name behind the implementation's back.
	AddRoute func(t *testing.T, name string, addr netip.Addr, proto uint8)
	// RouteOracle reads the local routes (table local, type local, host
	// routes) out of link name independently of Links, sorted by address
	// then protocol; none if there is no such link.
	RouteOracle func(t *testing.T, name string) []Route
}

const link = "vips0"

var (
	a  = netip.MustParseAddr("198.18.0.1")
	b  = netip.MustParseAddr("198.18.0.2")
	c  = netip.MustParseAddr("198.18.0.3")
	a6 = netip.MustParseAddr("2001:db8::1")
)

func host(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }

// Run runs every expectation as a subtest, each in a world from newWorld.
func Run(t *testing.T, newWorld func(t *testing.T) World) {
	for _, tc := range []struct {
		name string
		f    func(t *testing.T, w World)
	}{
		{"EnsureCreatesOnceThenAccepts", ensure},
		{"BindUnbindAndTheirErrors", bindUnbind},
		{"SyncAddsAndRemovesAndReports", syncAddsRemoves},
		{"SyncReplacesANonHostPrefix", syncNonHost},
		{"SyncValidatesEverythingFirst", syncValidates},
		{"ForeignLinkIsNeverTakenOver", foreign},
		{"UnmarkedDummyLinkIsNeverTakenOver", unmarked},
		{"AdoptMarksOnlyAnUnmarkedDummyLink", adopt},
		{"MissingLinkIsNotExist", missing},
		{"DeleteRemovesLinkAndAddrs", deleteLink},
		{"CanceledContextChangesNothing", canceled},
		{"UpdateIsIdempotentAndValidatesFirst", update},
		{"UpdateRoutesIsIdempotentAndValidatesFirst", updateRoutes},
		{"RoutesAreOnlyTheMarkedOnes", routesOwnership},
		{"DeleteTakesTheRoutes", deleteRoutes},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, newWorld(t)) })
	}
}

func ensure(t *testing.T, w World) {
	ctx := context.Background()
	created, err := w.Links.Ensure(ctx, link)
	if err != nil || !created {
		t.Fatalf("first Ensure = %v, %v; want true, nil", created, err)
	}
	created, err = w.Links.Ensure(ctx, link)
	if err != nil || created {
		t.Fatalf("second Ensure = %v, %v; want false, nil", created, err)
	}
	want(t, w, link, nil)
	var ve *dummy.ValidationError
	if _, err := w.Links.Ensure(ctx, "a-name-far-too-long"); !errors.As(err, &ve) || ve.Field != "name" || ve.Value != "a-name-far-too-long" {
		t.Fatalf("Ensure of a 19-byte name: %v; want a *ValidationError for field name", err)
	}
}

func bindUnbind(t *testing.T, w World) {
	ctx := context.Background()
	mustEnsure(t, w)
	for _, x := range []netip.Addr{a6, a} {
		if err := w.Links.Bind(ctx, link, x); err != nil {
			t.Fatalf("Bind %v: %v", x, err)
		}
	}
	want(t, w, link, []netip.Prefix{host(a), host(a6)})

	err := w.Links.Bind(ctx, link, a)
	var de *dummy.Error
	if !errors.Is(err, fs.ErrExist) || !errors.As(err, &de) || de.Op != "bind" || de.Link != link || de.Addr != host(a) {
		t.Fatalf("Bind of a bound address: %v; want a *dummy.Error{bind %s %s} matching fs.ErrExist", err, link, host(a))
	}
	if err := w.Links.Unbind(ctx, link, a); err != nil {
		t.Fatalf("Unbind: %v", err)
	}
	want(t, w, link, []netip.Prefix{host(a6)})
	if err := w.Links.Unbind(ctx, link, a); !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &de) || de.Op != "unbind" {
		t.Fatalf("Unbind of an unbound address: %v; want a *dummy.Error{unbind} matching fs.ErrNotExist", err)
	}

	var ve *dummy.ValidationError
	for _, bad := range []netip.Addr{{}, netip.MustParseAddr("::ffff:198.18.0.9"), netip.MustParseAddr("fe80::1"), netip.MustParseAddr("224.0.0.1"), netip.IPv4Unspecified()} {
		if err := w.Links.Bind(ctx, link, bad); !errors.As(err, &ve) || ve.Field != "addr" || ve.Value != bad.String() {
			t.Errorf("Bind %v: %v; want a *ValidationError for field addr", bad, err)
		}
	}
	want(t, w, link, []netip.Prefix{host(a6)})
}

func syncAddsRemoves(t *testing.T, w World) {
	ctx := context.Background()
	mustEnsure(t, w)
	for _, x := range []netip.Addr{a, b} {
		if err := w.Links.Bind(ctx, link, x); err != nil {
			t.Fatal(err)
		}
	}
	res, err := w.Links.Sync(ctx, link, []netip.Addr{c, b, a6, c})
	if err != nil {
		t.Fatal(err)
	}
	wantResult(t, res, []netip.Prefix{host(c), host(a6)}, []netip.Prefix{host(a)})
	want(t, w, link, []netip.Prefix{host(b), host(c), host(a6)})

	res, err = w.Links.Sync(ctx, link, []netip.Addr{a6, b, c})
	if err != nil || res.Changed() {
		t.Fatalf("Sync with nothing to do = %+v, %v; want no change", res, err)
	}
	res, err = w.Links.Sync(ctx, link, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantResult(t, res, nil, []netip.Prefix{host(b), host(c), host(a6)})
	want(t, w, link, nil)
}

func syncNonHost(t *testing.T, w World) {
	ctx := context.Background()
	mustEnsure(t, w)
	wide := netip.MustParsePrefix("198.18.0.1/24")
	w.AddAddr(t, link, wide)
	got, err := w.Links.Addrs(ctx, link)
	if err != nil || !slices.Equal(got, []netip.Prefix{wide}) {
		t.Fatalf("Addrs = %v, %v; want [%v]", got, err, wide)
	}
	res, err := w.Links.Sync(ctx, link, []netip.Addr{a})
	if err != nil {
		t.Fatal(err)
	}
	wantResult(t, res, []netip.Prefix{host(a)}, []netip.Prefix{wide})
	want(t, w, link, []netip.Prefix{host(a)})
}

func syncValidates(t *testing.T, w World) {
	ctx := context.Background()
	mustEnsure(t, w)
	if err := w.Links.Bind(ctx, link, a); err != nil {
		t.Fatal(err)
	}
	bad := netip.MustParseAddr("ff02::1")
	res, err := w.Links.Sync(ctx, link, []netip.Addr{b, bad})
	var ve *dummy.ValidationError
	if !errors.As(err, &ve) || ve.Field != "wanted[1]" || ve.Value != "ff02::1" {
		t.Fatalf("Sync with a multicast address: %v; want a *ValidationError for wanted[1]", err)
	}
	if res.Changed() {
		t.Fatalf("a refused Sync reports changes: %+v", res)
	}
	want(t, w, link, []netip.Prefix{host(a)})
}

func foreign(t *testing.T, w World) {
	ctx := context.Background()
	const br = "br-other"
	w.Foreign(t, br)
	theirs := netip.MustParsePrefix("198.18.7.1/24")
	w.AddAddr(t, br, theirs)

	isTypeErr := func(op string, err error) {
		t.Helper()
		var le *dummy.LinkTypeError
		if !errors.As(err, &le) || le.Name != br || le.Type != "bridge" || !errors.Is(err, fs.ErrExist) {
			t.Errorf("%s on a bridge: %v; want a *LinkTypeError{%s bridge} matching fs.ErrExist", op, err, br)
		}
	}
	_, err := w.Links.Ensure(ctx, br)
	isTypeErr("Ensure", err)
	_, err = w.Links.Addrs(ctx, br)
	isTypeErr("Addrs", err)
	isTypeErr("Bind", w.Links.Bind(ctx, br, a))
	isTypeErr("Unbind", w.Links.Unbind(ctx, br, theirs.Addr()))
	res, err := w.Links.Sync(ctx, br, nil)
	isTypeErr("Sync", err)
	if res.Changed() {
		t.Errorf("Sync on a bridge reports changes: %+v", res)
	}
	isTypeErr("Delete", w.Links.Delete(ctx, br))
	want(t, w, br, []netip.Prefix{theirs})

	// Syncing our own link leaves the other link's addresses alone, even
	// one that is also wanted on ours.
	mustEnsure(t, w)
	if _, err := w.Links.Sync(ctx, link, []netip.Addr{theirs.Addr()}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Links.Sync(ctx, link, nil); err != nil {
		t.Fatal(err)
	}
	want(t, w, br, []netip.Prefix{theirs})
	want(t, w, link, nil)
}

// unmarked: a dummy link of the asked-for name without the Client's mark
// (no alias, or another program's) is refused by every method with a
// *ForeignError, and it and its addresses stay; the Client's own link
// beside it works.
func unmarked(t *testing.T, w World) {
	ctx := context.Background()
	for _, alias := range []string{"", "docker-vips"} {
		name := "vip-none"
		if alias != "" {
			name = "vip-other"
		}
		w.ForeignDummy(t, name, alias)
		theirs := []netip.Prefix{netip.MustParsePrefix("198.18.7.1/32"), netip.MustParsePrefix("198.18.8.0/24"), netip.MustParsePrefix("2001:db8:7::1/128")}
		for _, p := range theirs {
			w.AddAddr(t, name, p)
		}
		isForeign := func(op string, err error) {
			t.Helper()
			var fe *dummy.ForeignError
			if !errors.As(err, &fe) || fe.Name != name || fe.Alias != alias || !errors.Is(err, fs.ErrExist) {
				t.Errorf("%s on %s (alias %q): %v; want a *ForeignError matching fs.ErrExist", op, name, alias, err)
			}
		}
		created, err := w.Links.Ensure(ctx, name)
		isForeign("Ensure", err)
		if created {
			t.Errorf("Ensure on %s reports it created the link", name)
		}
		_, err = w.Links.Addrs(ctx, name)
		isForeign("Addrs", err)
		isForeign("Bind", w.Links.Bind(ctx, name, a))
		isForeign("Unbind", w.Links.Unbind(ctx, name, theirs[0].Addr()))
		res, err := w.Links.Sync(ctx, name, []netip.Addr{a})
		isForeign("Sync", err)
		if res.Changed() {
			t.Errorf("Sync on %s reports changes: %+v", name, res)
		}
		isForeign("Update", w.Links.Update(ctx, name, []netip.Addr{b}, []netip.Addr{theirs[0].Addr()}))
		isForeign("Delete", w.Links.Delete(ctx, name))
		slices.SortFunc(theirs, func(x, y netip.Prefix) int { return x.Addr().Compare(y.Addr()) })
		want(t, w, name, theirs)
	}
	mustEnsure(t, w)
	if _, err := w.Links.Sync(ctx, link, []netip.Addr{a}); err != nil {
		t.Fatal(err)
	}
	want(t, w, link, []netip.Prefix{host(a)})
}

func missing(t *testing.T, w World) {
	ctx := context.Background()
	check := func(op string, err error) {
		t.Helper()
		var de *dummy.Error
		if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &de) || de.Link != "nosuch0" {
			t.Errorf("%s on a missing link: %v; want a *dummy.Error for nosuch0 matching fs.ErrNotExist", op, err)
		}
	}
	_, err := w.Links.Addrs(ctx, "nosuch0")
	check("Addrs", err)
	check("Bind", w.Links.Bind(ctx, "nosuch0", a))
	check("Unbind", w.Links.Unbind(ctx, "nosuch0", a))
	_, err = w.Links.Sync(ctx, "nosuch0", []netip.Addr{a})
	check("Sync", err)
	check("Delete", w.Links.Delete(ctx, "nosuch0"))
	if _, ok := w.Oracle(t, "nosuch0"); ok {
		t.Fatal("a call on a missing link created it")
	}
}

func deleteLink(t *testing.T, w World) {
	ctx := context.Background()
	mustEnsure(t, w)
	if err := w.Links.Bind(ctx, link, a); err != nil {
		t.Fatal(err)
	}
	if err := w.Links.Delete(ctx, link); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Oracle(t, link); ok {
		t.Fatal("the link is still there after Delete")
	}
	if err := w.Links.Delete(ctx, link); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("second Delete: %v; want fs.ErrNotExist", err)
	}
	created, err := w.Links.Ensure(ctx, link)
	if err != nil || !created {
		t.Fatalf("Ensure after Delete = %v, %v; want true, nil", created, err)
	}
	want(t, w, link, nil)
}

func canceled(t *testing.T, w World) {
	mustEnsure(t, w)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Links.Bind(ctx, link, a); !errors.Is(err, context.Canceled) {
		t.Errorf("Bind with a canceled context: %v; want context.Canceled", err)
	}
	if _, err := w.Links.Sync(ctx, link, []netip.Addr{b}); !errors.Is(err, context.Canceled) {
		t.Errorf("Sync with a canceled context: %v; want context.Canceled", err)
	}
	if _, err := w.Links.Ensure(ctx, "other0"); !errors.Is(err, context.Canceled) {
		t.Errorf("Ensure with a canceled context: %v; want context.Canceled", err)
	}
	want(t, w, link, nil)
	if _, ok := w.Oracle(t, "other0"); ok {
		t.Error("Ensure with a canceled context made the link")
	}
}

func mustEnsure(t *testing.T, w World) {
	t.Helper()
	if _, err := w.Links.Ensure(context.Background(), link); err != nil {
		t.Fatal(err)
	}
}

// want checks name's addresses both through Links (for our links) and the
// oracle.
func want(t *testing.T, w World, name string, ps []netip.Prefix) {
	t.Helper()
	got, ok := w.Oracle(t, name)
	if !ok {
		t.Fatalf("link %s is missing", name)
	}
	if !slices.Equal(got, ps) {
		t.Fatalf("addresses of %s (oracle) = %v; want %v", name, got, ps)
	}
	if name != link {
		return
	}
	got, err := w.Links.Addrs(context.Background(), name)
	if err != nil || !slices.Equal(got, ps) {
		t.Fatalf("Addrs(%s) = %v, %v; want %v", name, got, err, ps)
	}
}

func wantResult(t *testing.T, res dummy.SyncResult, added, removed []netip.Prefix) {
	t.Helper()
	if !slices.Equal(res.Added, added) || !slices.Equal(res.Removed, removed) {
		t.Fatalf("Sync result = added %v removed %v; want added %v removed %v", res.Added, res.Removed, added, removed)
	}
}

func update(t *testing.T, w World) {
	ctx := context.Background()
	if err := w.Links.Update(ctx, link, []netip.Addr{a}, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Update of a missing link = %v, want fs.ErrNotExist", err)
	}
	if _, err := w.Links.Ensure(ctx, link); err != nil {
		t.Fatal(err)
	}
	check := func(want ...netip.Addr) {
		t.Helper()
		got, ok := w.Oracle(t, link)
		var wantP []netip.Prefix
		for _, x := range want {
			wantP = append(wantP, host(x))
		}
		if !ok || !slices.Equal(got, wantP) {
			t.Fatalf("addresses %v (link there: %v), want %v", got, ok, wantP)
		}
	}
	if err := w.Links.Update(ctx, link, []netip.Addr{a, b, a6}, nil); err != nil {
		t.Fatal(err)
	}
	check(a, b, a6)
	// Binding what is bound and unbinding what is not are not errors.
	if err := w.Links.Update(ctx, link, []netip.Addr{a}, []netip.Addr{b, c}); err != nil {
		t.Fatalf("idempotent Update: %v", err)
	}
	check(a, a6)
	// One invalid address: a *ValidationError naming it, nothing changed.
	err := w.Links.Update(ctx, link, []netip.Addr{c}, []netip.Addr{a, netip.IPv4Unspecified()})
	var ve *dummy.ValidationError
	if !errors.As(err, &ve) || ve.Field != "remove[1]" {
		t.Fatalf("Update with an invalid address = %v, want a *ValidationError for remove[1]", err)
	}
	check(a, a6)
	w.Foreign(t, "br-foreign")
	var lte *dummy.LinkTypeError
	if err := w.Links.Update(ctx, "br-foreign", []netip.Addr{c}, nil); !errors.As(err, &lte) {
		t.Fatalf("Update of a bridge = %v, want a *LinkTypeError", err)
	}
}

// adopt: Adopt marks a dummy link without an alias (kube-proxy's kube-ipvs0)
// and keeps its addresses; then it is the Client's like one it made. A link
// with another alias, a bridge and a missing link are refused, unchanged.
func adopt(t *testing.T, w World) {
	ctx := context.Background()
	w.ForeignDummy(t, "kube-ipvs0", "")
	theirs := []netip.Prefix{host(a), host(a6)}
	for _, p := range theirs {
		w.AddAddr(t, "kube-ipvs0", p)
	}
	// AdoptableAddrs reads what Adopt would take, and takes nothing.
	if got, err := w.Links.AdoptableAddrs(ctx, "kube-ipvs0"); err != nil || !slices.Equal(got, theirs) {
		t.Fatalf("AdoptableAddrs of an unmarked dummy link = %v, %v; want %v", got, err, theirs)
	}
	if _, err := w.Links.Ensure(ctx, "kube-ipvs0"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Ensure after AdoptableAddrs: %v; want the link still unmarked (fs.ErrExist)", err)
	}
	if err := w.Links.Adopt(ctx, "kube-ipvs0"); err != nil {
		t.Fatalf("Adopt of an unmarked dummy link: %v", err)
	}
	if err := w.Links.Adopt(ctx, "kube-ipvs0"); err != nil {
		t.Fatalf("Adopt again: %v", err)
	}
	if created, err := w.Links.Ensure(ctx, "kube-ipvs0"); err != nil || created {
		t.Fatalf("Ensure after Adopt = %v, %v; want false, nil", created, err)
	}
	want(t, w, "kube-ipvs0", []netip.Prefix{host(a), host(a6)})
	if err := w.Links.Bind(ctx, "kube-ipvs0", b); err != nil {
		t.Fatalf("Bind on the adopted link: %v", err)
	}
	w.ForeignDummy(t, "vip-other", "docker-vips")
	w.AddAddr(t, "vip-other", host(c))
	var fe *dummy.ForeignError
	if err := w.Links.Adopt(ctx, "vip-other"); !errors.As(err, &fe) || fe.Alias != "docker-vips" || !errors.Is(err, fs.ErrExist) {
		t.Errorf("Adopt of another owner's link: %v; want a *ForeignError", err)
	}
	if _, err := w.Links.AdoptableAddrs(ctx, "vip-other"); !errors.As(err, &fe) || fe.Alias != "docker-vips" {
		t.Errorf("AdoptableAddrs of another owner's link: %v; want a *ForeignError", err)
	}
	if got, err := w.Links.AdoptableAddrs(ctx, "kube-ipvs0"); err != nil || len(got) != 3 {
		t.Errorf("AdoptableAddrs of the adopted link = %v, %v; want its 3 addresses", got, err)
	}
	want(t, w, "vip-other", []netip.Prefix{host(c)})
	w.Foreign(t, "br-other")
	var lt *dummy.LinkTypeError
	if err := w.Links.Adopt(ctx, "br-other"); !errors.As(err, &lt) {
		t.Errorf("Adopt of a bridge: %v; want a *LinkTypeError", err)
	}
	if err := w.Links.Adopt(ctx, "nothing0"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Adopt of a missing link: %v; want fs.ErrNotExist", err)
	}
	if _, err := w.Links.AdoptableAddrs(ctx, "br-other"); !errors.As(err, &lt) {
		t.Errorf("AdoptableAddrs of a bridge: %v; want a *LinkTypeError", err)
	}
	if _, err := w.Links.AdoptableAddrs(ctx, "nothing0"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("AdoptableAddrs of a missing link: %v; want fs.ErrNotExist", err)
	}
}

// ourRoutes are xs as the routes UpdateRoutes makes.
func ourRoutes(xs ...netip.Addr) []Route {
	var rs []Route
	for _, x := range xs {
		rs = append(rs, Route{Addr: x, Protocol: dummy.RouteProtocol})
	}
	return rs
}

func wantRoutes(t *testing.T, w World, name string, rs []Route) {
	t.Helper()
	if got := w.RouteOracle(t, name); !slices.Equal(got, rs) {
		t.Fatalf("local routes out of %s: %v, want %v", name, got, rs)
	}
}

func wantListed(t *testing.T, w World, xs ...netip.Addr) {
	t.Helper()
	got, err := w.Links.Routes(context.Background(), link)
	if err != nil || !slices.Equal(got, xs) {
		t.Fatalf("Routes = %v, %v; want %v", got, err, xs)
	}
}

// updateRoutes: both families, idempotent, validated first, no address
// bound; a missing link, a bridge and an unmarked dummy are refused.
func updateRoutes(t *testing.T, w World) {
	ctx := context.Background()
	if err := w.Links.UpdateRoutes(ctx, link, []netip.Addr{a}, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("UpdateRoutes of a missing link = %v, want fs.ErrNotExist", err)
	}
	if _, err := w.Links.Routes(ctx, link); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Routes of a missing link = %v, want fs.ErrNotExist", err)
	}
	mustEnsure(t, w)
	wantListed(t, w)
	if err := w.Links.UpdateRoutes(ctx, link, []netip.Addr{a, b, a6}, nil); err != nil {
		t.Fatal(err)
	}
	wantRoutes(t, w, link, ourRoutes(a, b, a6))
	wantListed(t, w, a, b, a6)
	// Routes, not addresses (the kernel's own link-local address aside,
	// which an up link gets).
	if ps, _ := w.Oracle(t, link); slices.ContainsFunc(ps, func(p netip.Prefix) bool { return !p.Addr().IsLinkLocalUnicast() }) {
		t.Fatalf("UpdateRoutes bound addresses: %v", ps)
	}
	// Adding what is there and removing what is not are not errors.
	if err := w.Links.UpdateRoutes(ctx, link, []netip.Addr{a, a6}, []netip.Addr{b, c}); err != nil {
		t.Fatalf("idempotent UpdateRoutes: %v", err)
	}
	wantRoutes(t, w, link, ourRoutes(a, a6))
	err := w.Links.UpdateRoutes(ctx, link, []netip.Addr{c}, []netip.Addr{a, netip.IPv4Unspecified()})
	var ve *dummy.ValidationError
	if !errors.As(err, &ve) || ve.Field != "remove[1]" || ve.Value != "0.0.0.0" {
		t.Fatalf("UpdateRoutes with an invalid address = %v, want a *ValidationError for remove[1] 0.0.0.0", err)
	}
	err = w.Links.UpdateRoutes(ctx, link, []netip.Addr{netip.MustParseAddr("fe80::1")}, nil)
	if !errors.As(err, &ve) || ve.Field != "add[0]" {
		t.Fatalf("UpdateRoutes of a link-local address = %v, want a *ValidationError for add[0]", err)
	}
	if err := w.Links.UpdateRoutes(ctx, "a-name-far-too-long", nil, []netip.Addr{a}); !errors.As(err, &ve) || ve.Field != "name" {
		t.Fatalf("UpdateRoutes with a bad name = %v, want a *ValidationError for name", err)
	}
	wantRoutes(t, w, link, ourRoutes(a, a6))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.Links.UpdateRoutes(cctx, link, nil, []netip.Addr{a}); !errors.Is(err, context.Canceled) {
		t.Fatalf("UpdateRoutes with a canceled context: %v; want context.Canceled", err)
	}
	if err := w.Links.UpdateRoutes(ctx, link, nil, []netip.Addr{a, a6}); err != nil {
		t.Fatal(err)
	}
	wantRoutes(t, w, link, nil)
	w.Foreign(t, "br-foreign")
	var lte *dummy.LinkTypeError
	if err := w.Links.UpdateRoutes(ctx, "br-foreign", []netip.Addr{c}, nil); !errors.As(err, &lte) {
		t.Fatalf("UpdateRoutes of a bridge = %v, want a *LinkTypeError", err)
	}
	if _, err := w.Links.Routes(ctx, "br-foreign"); !errors.As(err, &lte) {
		t.Fatalf("Routes of a bridge = %v, want a *LinkTypeError", err)
	}
	wantRoutes(t, w, "br-foreign", nil)
}

// routesOwnership: another program's local routes for the same addresses
// (out of a dummy link named like ours but unmarked, even with our
// protocol number; out of our link with another protocol) are never
// listed, changed or removed, and that link is refused.
func routesOwnership(t *testing.T, w World) {
	ctx := context.Background()
	mustEnsure(t, w)
	w.ForeignDummy(t, "vips1", "")
	w.AddRoute(t, "vips1", a, dummy.RouteProtocol)
	w.AddRoute(t, "vips1", a6, dummy.RouteProtocol)
	w.AddRoute(t, "vips1", b, 4)
	// Theirs out of our link: the same IPv4 address, another protocol.
	// (The kernel takes an IPv6 route that differs only by protocol for
	// the same route, so theirs on our link is another IPv6 address.)
	c6 := netip.MustParseAddr("2001:db8::3")
	w.AddRoute(t, link, a, 4)
	w.AddRoute(t, link, c6, 16)
	theirs := []Route{{a, dummy.RouteProtocol}, {b, 4}, {a6, dummy.RouteProtocol}}
	onOurs := []Route{{a, 4}, {c6, 16}}
	wantListed(t, w)

	if err := w.Links.UpdateRoutes(ctx, link, []netip.Addr{a, b, a6}, nil); err != nil {
		t.Fatal(err)
	}
	wantListed(t, w, a, b, a6)
	wantRoutes(t, w, link, []Route{{a, 4}, {a, dummy.RouteProtocol}, {b, dummy.RouteProtocol}, {a6, dummy.RouteProtocol}, {c6, 16}})
	wantRoutes(t, w, "vips1", theirs)
	// Removing ours, and what is only theirs, removes only ours.
	if err := w.Links.UpdateRoutes(ctx, link, nil, []netip.Addr{a, b, a6, c6}); err != nil {
		t.Fatal(err)
	}
	wantListed(t, w)
	wantRoutes(t, w, link, onOurs)
	wantRoutes(t, w, "vips1", theirs)

	var fe *dummy.ForeignError
	if _, err := w.Links.Routes(ctx, "vips1"); !errors.As(err, &fe) {
		t.Fatalf("Routes of an unmarked dummy link = %v, want a *ForeignError", err)
	}
	if err := w.Links.UpdateRoutes(ctx, "vips1", []netip.Addr{c}, []netip.Addr{a, a6}); !errors.As(err, &fe) {
		t.Fatalf("UpdateRoutes of an unmarked dummy link = %v, want a *ForeignError", err)
	}
	wantRoutes(t, w, "vips1", theirs)
}

// deleteRoutes: deleting the link takes our routes with it (the kernel's
// doing), and leaves another link's routes for the same addresses.
func deleteRoutes(t *testing.T, w World) {
	ctx := context.Background()
	mustEnsure(t, w)
	w.ForeignDummy(t, "other1", "")
	w.AddRoute(t, "other1", a, dummy.RouteProtocol)
	if err := w.Links.UpdateRoutes(ctx, link, []netip.Addr{a, a6}, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Links.Delete(ctx, link); err != nil {
		t.Fatal(err)
	}
	wantRoutes(t, w, link, nil)
	wantRoutes(t, w, "other1", ourRoutes(a))
	mustEnsure(t, w)
	wantListed(t, w)
}
