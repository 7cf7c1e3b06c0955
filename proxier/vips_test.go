package proxier

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// recordingLink is a fake link client that records every change it makes,
// in order, as "addr+ X", "addr- X", "route+ X", "route- X".
type recordingLink struct {
	*dummytest.Fake
	mu  sync.Mutex
	ops []string
}

func (l *recordingLink) record(kind string, add, remove []netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range add {
		l.ops = append(l.ops, kind+"+ "+a.String())
	}
	for _, a := range remove {
		l.ops = append(l.ops, kind+"- "+a.String())
	}
}

func (l *recordingLink) Update(ctx context.Context, name string, add, remove []netip.Addr) error {
	l.record("addr", add, remove)
	return l.Fake.Update(ctx, name, add, remove)
}

func (l *recordingLink) UpdateRoutes(ctx context.Context, name string, add, remove []netip.Addr) error {
	l.record("route", add, remove)
	return l.Fake.UpdateRoutes(ctx, name, add, remove)
}

// vipWorld is the fakes of one node, shared by the Proxiers a test starts
// over it one after another, as restarted programs would be.
type vipWorld struct {
	ipvs  *ipvstest.Fake
	link  *recordingLink
	rules *iptablestest.Fake
}

func newVIPWorld() *vipWorld {
	return &vipWorld{ipvs: ipvstest.New(), link: &recordingLink{Fake: dummytest.New()}, rules: iptablestest.New(iptables.IPv4)}
}

func (w *vipWorld) proxier(t *testing.T, c Config) *Proxier {
	t.Helper()
	p, err := New(&c, Deps{IPVS: w.ipvs, Link: w.link, Sysctls: sysctltest.New(""), Rules: map[Family]Rules{IPv4: w.rules}})
	must(t, err)
	return p
}

// held returns the link's VIPs as addresses and as our routes.
func (w *vipWorld) held(name string) (addrs, routes []netip.Addr) {
	ps, _ := w.link.LinkAddrs(name)
	for _, p := range ps {
		addrs = append(addrs, p.Addr())
	}
	rs, _ := w.link.LinkRoutes(name)
	for _, r := range rs {
		if r.Protocol == dummy.RouteProtocol {
			routes = append(routes, r.Addr)
		}
	}
	return addrs, routes
}

func twoVIPs() State {
	s := oneService()
	s.Services["api"] = Service{
		ClusterIPs: []netip.Addr{a("198.18.100.2")},
		Ports:      []Port{{Name: "https", Protocol: TCP, Port: 443, TargetPort: 8443}},
		Endpoints:  []Endpoint{{Addr: a("198.18.1.3"), Ready: true}},
	}
	return s
}

// VIPLocalRoutes holds each VIP as a marked local route and binds no
// address; a sync without change sends nothing; the plan is rendered as
// ip route commands; removing a service removes its route.
func TestVIPLocalRoutesHoldVIPsAsRoutes(t *testing.T) {
	ctx := context.Background()
	w := newVIPWorld()
	p := w.proxier(t, Config{VIPMode: VIPLocalRoutes})
	res, err := p.Sync(ctx, ptr(twoVIPs()))
	must(t, err)
	addrs, routes := w.held(DefaultLinkName)
	if len(addrs) != 0 || !slices.Equal(routes, []netip.Addr{a("198.18.100.1"), a("198.18.100.2")}) {
		t.Fatalf("after the first sync: addresses %v, routes %v", addrs, routes)
	}
	if want := "ip route add local 198.18.100.1/32 dev ipvskit0 table local proto 173 scope host\n"; !strings.Contains(res.Plan.String(), want) || strings.Contains(res.Plan.String(), "ip addr") {
		t.Errorf("plan:\n%s\nwant a line %q and no ip addr", res.Plan, want)
	}
	if !w.rules.Ruleset().Has(iptables.IPVSIPs, iptables.Addr(a("198.18.100.2"))) {
		t.Errorf("the VIP is not in the IPVSIPs set: %v", w.rules.Ruleset().Members(iptables.IPVSIPs))
	}
	n := len(w.link.ops)
	res, err = p.Sync(ctx, ptr(twoVIPs()))
	must(t, err)
	if !res.Plan.Empty() || len(w.link.ops) != n {
		t.Errorf("a sync without change: plan %v, link ops %v", res.Plan, w.link.ops[n:])
	}
	res, err = p.Sync(ctx, ptr(oneService()))
	must(t, err)
	if _, routes := w.held(DefaultLinkName); !slices.Equal(routes, []netip.Addr{a("198.18.100.1")}) {
		t.Errorf("after removing a service: routes %v", routes)
	}
	if want := "ip route del local 198.18.100.2/32 dev ipvskit0 table local proto 173 scope host\n"; !strings.Contains(res.Plan.String(), want) {
		t.Errorf("plan:\n%s\nwant a line %q", res.Plan, want)
	}
}

// A link client without Routes and UpdateRoutes cannot serve
// VIPLocalRoutes: New says so, and the address mode does not need them.
func TestVIPLocalRoutesNeedsARouteLink(t *testing.T) {
	deps := Deps{IPVS: ipvstest.New(), Link: struct{ Link }{dummytest.New()}, Sysctls: sysctltest.New(""), Rules: map[Family]Rules{IPv4: iptablestest.New(iptables.IPv4)}}
	if _, err := New(&Config{VIPMode: VIPLocalRoutes}, deps); err == nil || !strings.Contains(err.Error(), "UpdateRoutes") {
		t.Errorf("VIPLocalRoutes with a link client lacking routes: %v, want an error naming UpdateRoutes", err)
	}
	if _, err := New(&Config{}, deps); err != nil {
		t.Errorf("VIPAddresses with a link client lacking routes: %v", err)
	}
	var ve *ValidationError
	if _, err := New(&Config{VIPMode: 7}, deps); !errors.As(err, &ve) {
		t.Errorf("VIPMode 7: %v, want a *ValidationError", err)
	}
}

// A Proxier started in one mode over the VIPs an earlier run held in the
// other takes them over without a blip: each in its new form first, the
// old form removed after. What is not its own (an address or route that
// is not in its ledger, on its link; a route for one of its VIPs out of
// another link) stays.
func TestSwitchingVIPModeReplacesTheOldFormAfterTheNew(t *testing.T) {
	for _, c := range []struct{ from, to VIPMode }{{VIPAddresses, VIPLocalRoutes}, {VIPLocalRoutes, VIPAddresses}} {
		t.Run(fmt.Sprintf("%v-to-%v", c.from, c.to), func(t *testing.T) {
			ctx := context.Background()
			w := newVIPWorld()
			_, err := w.proxier(t, Config{VIPMode: c.from}).Sync(ctx, ptr(twoVIPs()))
			must(t, err)
			// Others' objects, on our link and beside it.
			must(t, w.link.AddAddr(DefaultLinkName, netip.MustParsePrefix("198.18.100.9/32")))
			must(t, w.link.AddRoute(DefaultLinkName, a("198.18.100.8"), dummy.RouteProtocol))
			must(t, w.link.AddLink("other0", "dummy"))
			must(t, w.link.AddRoute("other0", a("198.18.100.1"), dummy.RouteProtocol))
			must(t, w.link.AddAddr("other0", netip.MustParsePrefix("198.18.100.2/32")))
			other := w.link.Dump()
			other = other[strings.Index(other, "link add other0"):]

			w.link.ops = nil
			p := w.proxier(t, Config{VIPMode: c.to})
			_, err = p.Sync(ctx, ptr(oneService())) // and 198.18.100.2 is no longer wanted
			must(t, err)
			addrs, routes := w.held(DefaultLinkName)
			wantAddrs, wantRoutes := []netip.Addr{a("198.18.100.9")}, []netip.Addr{a("198.18.100.1"), a("198.18.100.8")}
			newKind, oldKind := "route", "addr"
			if c.to == VIPAddresses {
				wantAddrs, wantRoutes = []netip.Addr{a("198.18.100.1"), a("198.18.100.9")}, []netip.Addr{a("198.18.100.8")}
				newKind, oldKind = "addr", "route"
			}
			if !slices.Equal(addrs, wantAddrs) || !slices.Equal(routes, wantRoutes) {
				t.Errorf("after the switch: addresses %v, routes %v; want %v, %v", addrs, routes, wantAddrs, wantRoutes)
			}
			add, del := slices.Index(w.link.ops, newKind+"+ 198.18.100.1"), slices.Index(w.link.ops, oldKind+"- 198.18.100.1")
			if add < 0 || del < 0 || add > del {
				t.Errorf("link changes %v: want %s+ before %s- of 198.18.100.1", w.link.ops, newKind, oldKind)
			}
			if !slices.Contains(w.link.ops, oldKind+"- 198.18.100.2") {
				t.Errorf("link changes %v: the unwanted VIP's old form is not removed", w.link.ops)
			}
			if got := w.link.Dump(); !strings.HasSuffix(got, other) {
				t.Errorf("the other link changed:\n%s\nwant it to end with\n%s", got, other)
			}
			// A later read back finds nothing left to do.
			res, err := p.Sync(ctx, ptr(oneService()))
			must(t, err)
			if !res.Plan.Empty() {
				t.Errorf("a second sync: %v", res.Plan)
			}
		})
	}
}

// Taking over a kube-proxy node in VIPLocalRoutes: kube-ipvs0's addresses
// become routes, each route added before its address goes.
func TestAdoptKubeProxyInRouteMode(t *testing.T) {
	ctx := context.Background()
	w := newVIPWorld()
	must(t, w.link.AddLinkAlias("kube-ipvs0", "dummy", ""))
	must(t, w.link.AddAddr("kube-ipvs0", netip.MustParsePrefix("198.18.100.1/32")))
	must(t, w.link.AddAddr("kube-ipvs0", netip.MustParsePrefix("198.18.100.7/32"))) // a VIP it no longer needs
	p := w.proxier(t, Config{KubeProxyNames: true, AdoptKubeProxy: true, VIPMode: VIPLocalRoutes})
	_, err := p.Sync(ctx, ptr(oneService()))
	must(t, err)
	addrs, routes := w.held("kube-ipvs0")
	if len(addrs) != 0 || !slices.Equal(routes, []netip.Addr{a("198.18.100.1")}) {
		t.Errorf("after the takeover: addresses %v, routes %v", addrs, routes)
	}
	// The last IPv4 address gone, the kernel flushes the link's IPv4
	// routes: the route is added again at once.
	if want := []string{"route+ 198.18.100.1", "addr- 198.18.100.1", "addr- 198.18.100.7", "route+ 198.18.100.1"}; !slices.Equal(w.link.ops, want) {
		t.Errorf("link changes %v, want %v", w.link.ops, want)
	}
}

// Reconcile names a missing route as a route, and puts it back.
func TestReconcileRepairsARouteVIP(t *testing.T) {
	ctx := context.Background()
	w := newVIPWorld()
	p := w.proxier(t, Config{VIPMode: VIPLocalRoutes})
	_, err := p.Sync(ctx, ptr(twoVIPs()))
	must(t, err)
	must(t, w.link.Fake.UpdateRoutes(ctx, DefaultLinkName, nil, []netip.Addr{a("198.18.100.2")}))
	rep, err := p.Reconcile(ctx)
	must(t, err)
	wantReport(t, rep, "addresses: route local 198.18.100.2 on ipvskit0: missing")
	if _, routes := w.held(DefaultLinkName); !slices.Equal(routes, []netip.Addr{a("198.18.100.1"), a("198.18.100.2")}) {
		t.Errorf("after the repair: routes %v", routes)
	}
}
