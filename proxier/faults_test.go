package proxier_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/conntrack/conntracktest"
	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/proxier/proxiertest"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// The fault sweep on the fakes: for every operation of a realistic run
// (the first sync, a sync that changes much, a restart with other options,
// a Cleanup, a Cleanup by a new Proxier), and for each way it can fail
// (proxiertest.Modes), fresh fakes with foreign objects are brought to the
// run's start, the operation fails, the run reports it as an *OpError of
// that subsystem, and the same run again must leave the fakes exactly as a
// run without failures leaves fakes that started the same; after a sync,
// the next one sends nothing.
func TestFaultSweep(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) { sweep(t, sc) })
	}
}

// TestTheSweepsReferenceIsAFreshSyncOfB: the state the Update and Drain
// sweeps converge to (A, then B, then a Drain once the drained
// destinations are idle) is exactly a clean proxier's sync of B on clean
// fakes, but for the conntrack table: only the proxier that served A knows
// that the flows to A's frontends that B removed are stale.
func TestTheSweepsReferenceIsAFreshSyncOfB(t *testing.T) {
	ctx := context.Background()
	fresh, updated := newWorld(t), newWorld(t)
	pf, err := proxier.New(&dualStack, fresh.deps())
	must(t, err)
	pu, err := proxier.New(&dualStack, updated.deps())
	must(t, err)
	a, b := stateA(), stateB()
	_, err = pf.Sync(ctx, &b)
	must(t, err)
	_, err = pu.Sync(ctx, &a)
	must(t, err)
	b = stateB()
	_, err = pu.Sync(ctx, &b)
	must(t, err)
	if fresh.tables() == updated.tables() {
		t.Fatal("nothing drains from A to B: the Drain sweep sweeps nothing")
	}
	res, err := pu.Drain(ctx)
	must(t, err)
	if res.Draining != 0 || len(res.Ended) == 0 {
		t.Fatalf("Drain: %+v", res)
	}
	if got, want := updated.tables(), fresh.tables(); got != want {
		t.Errorf("A, B and a Drain differ from a fresh sync of B:\n%s", diff(want, got))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestACleanupCutShortCanBeRunAgainByAnotherProxier: a Cleanup by a
// Proxier that did not apply the state (a restarted program, or a cleanup
// tool) fails part way; run again by yet another Proxier, it still removes
// every virtual server on the VIPs. It used to delete the VIP link first,
// and then nothing told the next run that those virtual servers were ours:
// they were left for good.
func TestACleanupCutShortCanBeRunAgainByAnotherProxier(t *testing.T) {
	ctx := context.Background()
	newP := func(d proxier.Deps) *proxier.Proxier {
		p, err := proxier.New(&dualStack, d)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	clean := newWorld(t)
	b := stateB()
	if _, err := newP(clean.deps()).Sync(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if err := newP(clean.deps()).Cleanup(ctx); err != nil {
		t.Fatal(err)
	}

	w := newWorld(t)
	if _, err := newP(w.deps()).Sync(ctx, &b); err != nil {
		t.Fatal(err)
	}
	in := proxiertest.New()
	// IPVS operation 0 lists the services; 1 is the first delete.
	in.FailFirst(proxiertest.At(proxier.SubsystemIPVS, 1), proxiertest.CutShort)
	if err := newP(in.Wrap(w.deps())).Cleanup(ctx); !errors.Is(err, proxiertest.ErrInjected) {
		t.Fatalf("Cleanup with its IPVS batch cut short: %v", err)
	}
	if err := newP(w.deps()).Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := w.dump(), clean.dump(); got != want {
		t.Errorf("after a failed Cleanup and another Proxier's, the fakes differ from one clean Cleanup's:\n%s", diff(want, got))
	}
	w.checkForeign(t)
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

var (
	dualStack = proxier.Config{Families: []proxier.Family{proxier.IPv4, proxier.IPv6}}
	// changed is dualStack with other rules options, for a restart.
	changed = proxier.Config{Families: dualStack.Families, MasqueradeAll: true,
		LocalDetector: proxier.LocalDetector{ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.8.0/21"), netip.MustParsePrefix("2001:db8:8::/48")}}}
	// routes is dualStack with the VIPs held as local routes.
	routes = proxier.Config{Families: dualStack.Families, VIPMode: proxier.VIPLocalRoutes}
)

// scenario is a run to sweep: prepare brings fresh fakes (through deps,
// wrapped or not) to the run's start and returns the Proxier that makes
// the run; run makes it.
type scenario struct {
	name    string
	prepare func(t *testing.T, w *world, in *proxiertest.Injector) *proxier.Proxier
	run     func(p *proxier.Proxier) (*proxier.Result, error)
	// after, if set, checks what follows once the run converged.
	after func(t *testing.T, p *proxier.Proxier, in *proxiertest.Injector)
}

// quiet is an after for syncs: the same sync again sends nothing.
func quiet(s func() proxier.State) func(t *testing.T, p *proxier.Proxier, in *proxiertest.Injector) {
	return func(t *testing.T, p *proxier.Proxier, in *proxiertest.Injector) {
		in.Reset()
		st := s()
		res, err := p.Sync(context.Background(), &st)
		if err != nil || !res.Plan.Empty() || len(in.Ops()) != 0 {
			t.Errorf("the sync after converging: err %v, ops %v, plan:\n%v", err, in.Ops(), res.Plan)
		}
	}
}

// drained is an after for Drain: the next Drain sends nothing, and the
// next sync (which reads back, after a failed Drain) writes nothing.
func drained(t *testing.T, p *proxier.Proxier, in *proxiertest.Injector) {
	in.Reset()
	if res, err := p.Drain(context.Background()); err != nil || res.Draining != 0 || len(in.Ops()) != 0 {
		t.Errorf("the Drain after converging: err %v, still draining %d, ops %v", err, res.Draining, in.Ops())
	}
	b := stateB()
	if res, err := p.Sync(context.Background(), &b); err != nil || !res.Plan.Empty() {
		t.Errorf("the sync after the Drain: err %v, plan:\n%v", err, res.Plan)
	}
}

func scenarios() []scenario {
	syncTo := func(s func() proxier.State) func(p *proxier.Proxier) (*proxier.Result, error) {
		return func(p *proxier.Proxier) (*proxier.Result, error) {
			st := s()
			return p.Sync(context.Background(), &st)
		}
	}
	cleanup := func(p *proxier.Proxier) (*proxier.Result, error) { return nil, p.Cleanup(context.Background()) }
	// at returns a Proxier with cfg over w's fakes (wrapped by in, if not
	// nil) that has synced s (if not nil).
	at := func(t *testing.T, w *world, in *proxiertest.Injector, cfg proxier.Config, s func() proxier.State) *proxier.Proxier {
		d := w.deps()
		if in != nil {
			d = in.Wrap(d)
		}
		p, err := proxier.New(&cfg, d)
		if err != nil {
			t.Fatal(err)
		}
		if s != nil {
			if _, err := syncTo(s)(p); err != nil {
				t.Fatalf("preparing: %v", err)
			}
		}
		return p
	}
	return []scenario{
		{name: "FirstSync", after: quiet(stateA), run: syncTo(stateA),
			prepare: func(t *testing.T, w *world, in *proxiertest.Injector) *proxier.Proxier {
				return at(t, w, in, dualStack, nil)
			}},
		{name: "Update", after: quiet(stateB), run: syncTo(stateB),
			prepare: func(t *testing.T, w *world, in *proxiertest.Injector) *proxier.Proxier {
				return at(t, w, in, dualStack, stateA)
			}},
		// The same change as Update, through Update: only the services
		// that differ, by ID.
		{name: "UpdateByID", after: quiet(stateB), run: func(p *proxier.Proxier) (*proxier.Result, error) {
			return p.Update(context.Background(), changesBetween(stateA(), stateB()))
		},
			prepare: func(t *testing.T, w *world, in *proxiertest.Injector) *proxier.Proxier {
				return at(t, w, in, dualStack, stateA)
			}},
		{name: "RestartWithOtherRulesOptions", after: quiet(stateB), run: syncTo(stateB),
			prepare: func(t *testing.T, w *world, in *proxiertest.Injector) *proxier.Proxier {
				at(t, w, nil, dualStack, stateA)
				return at(t, w, in, changed, nil)
			}},
		// The TCP destinations B removed drain at weight 0; the fakes
		// count no connections, so Drain deletes them all.
		{name: "Drain", after: drained, run: func(p *proxier.Proxier) (*proxier.Result, error) {
			_, err := p.Drain(context.Background())
			return nil, err
		},
			prepare: func(t *testing.T, w *world, in *proxiertest.Injector) *proxier.Proxier {
				p := at(t, w, in, dualStack, stateA)
				if res, err := syncTo(stateB)(p); err != nil || res.Draining == 0 {
					t.Fatalf("preparing: %v; %d draining, want some", err, res.Draining)
				}
				return p
			}},
		{name: "Cleanup", run: cleanup,
			prepare: func(t *testing.T, w *world, in *proxiertest.Injector) *proxier.Proxier {
				return at(t, w, in, dualStack, stateB)
			}},
		{name: "FirstSyncRoutes", after: quiet(stateA), run: syncTo(stateA),
			prepare: func(t *testing.T, w *world, in *proxiertest.Injector) *proxier.Proxier {
				return at(t, w, in, routes, nil)
			}},
		{name: "UpdateRoutes", after: quiet(stateB), run: syncTo(stateB),
			prepare: func(t *testing.T, w *world, in *proxiertest.Injector) *proxier.Proxier {
				return at(t, w, in, routes, stateA)
			}},
		// A restart in the other VIP mode: the new form is added and the
		// old removed in the same run, whatever fails in between.
		{name: "RestartFromAddressesToRoutes", after: quiet(stateB), run: syncTo(stateB),
			prepare: func(t *testing.T, w *world, in *proxiertest.Injector) *proxier.Proxier {
				at(t, w, nil, dualStack, stateA)
				return at(t, w, in, routes, nil)
			}},
		{name: "RestartFromRoutesToAddresses", after: quiet(stateB), run: syncTo(stateB),
			prepare: func(t *testing.T, w *world, in *proxiertest.Injector) *proxier.Proxier {
				at(t, w, nil, routes, stateA)
				return at(t, w, in, dualStack, nil)
			}},
		// The same State: every VIP is wanted and, after the first
		// removal fails, held in both forms; the run again still removes
		// the old one.
		{name: "RestartToRoutesSameState", after: quiet(stateB), run: syncTo(stateB),
			prepare: func(t *testing.T, w *world, in *proxiertest.Injector) *proxier.Proxier {
				at(t, w, nil, dualStack, stateB)
				return at(t, w, in, routes, nil)
			}},
		{name: "RestartToAddressesSameState", after: quiet(stateB), run: syncTo(stateB),
			prepare: func(t *testing.T, w *world, in *proxiertest.Injector) *proxier.Proxier {
				at(t, w, nil, routes, stateB)
				return at(t, w, in, dualStack, nil)
			}},
		{name: "CleanupRoutes", run: cleanup,
			prepare: func(t *testing.T, w *world, in *proxiertest.Injector) *proxier.Proxier {
				return at(t, w, in, routes, stateB)
			}},
		{name: "CleanupByANewProxier", run: cleanup,
			prepare: func(t *testing.T, w *world, in *proxiertest.Injector) *proxier.Proxier {
				at(t, w, nil, dualStack, stateB)
				return at(t, w, in, dualStack, nil)
			}},
	}
}

// changesBetween are the Update changes from a to b (same node): b's
// services that differ from a's, and nil for those b lacks.
func changesBetween(a, b proxier.State) map[string]*proxier.Service {
	out := map[string]*proxier.Service{}
	for id, s := range b.Services {
		if old, ok := a.Services[id]; !ok || !reflect.DeepEqual(old, s) {
			out[id] = &s
		}
	}
	for id := range a.Services {
		if _, ok := b.Services[id]; !ok {
			out[id] = nil
		}
	}
	return out
}

func sweep(t *testing.T, sc scenario) {
	// The clean run: its operations, and the fakes after it.
	clean, in := newWorld(t), proxiertest.New()
	p := sc.prepare(t, clean, in)
	in.Reset()
	if _, err := sc.run(p); err != nil {
		t.Fatalf("clean run: %v", err)
	}
	ops, want := in.Ops(), clean.dump()
	if len(ops) == 0 {
		t.Fatal("the clean run made no operation")
	}
	subs := map[proxier.Subsystem]int{}
	for _, op := range ops {
		subs[op.Subsystem]++
	}
	t.Logf("%d operations: %v", len(ops), subs)

	for _, op := range ops {
		for _, mode := range proxiertest.Modes {
			t.Run(fmt.Sprintf("%02d-%s-%v", op.Index, op.Subsystem, mode), func(t *testing.T) {
				t.Parallel() // each has fakes of its own
				w, in := newWorld(t), proxiertest.New()
				p := sc.prepare(t, w, in)
				in.Reset()
				in.FailAt(op.Index, mode)
				_, err := sc.run(p)
				ie := in.Injected()
				if ie == nil {
					t.Fatalf("operation %v was not reached", op)
				}
				if ie.Op != op {
					t.Errorf("the failure hit %v, want %v: the run is not deterministic", ie.Op, op)
				}
				var oe *proxier.OpError
				if !errors.Is(err, proxiertest.ErrInjected) || !errors.As(err, &oe) || oe.Subsystem != op.Subsystem {
					t.Fatalf("failure of %v: the run returned %v, want a proxier.OpError of %s around the injected failure", op, err, op.Subsystem)
				}
				checkPrefixes(t, err)
				in.Reset()
				if _, err := sc.run(p); err != nil {
					t.Fatalf("after the failure of %v, the run again failed: %v", op, err)
				}
				if got := w.dump(); got != want {
					t.Errorf("after the failure of %v and a run again, the fakes differ from a clean run's:\n%s", op, diff(want, got))
				}
				w.checkForeign(t)
				if sc.after != nil {
					sc.after(t, p, in)
				}
			})
		}
	}
}

// checkPrefixes fails t if err's message names a package twice, either in
// a row ("proxier: ipvs: ipvs: batch") or at all in one line ("ipvs:
// batch: ...; first: ipvs: add service").
func checkPrefixes(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	if w := testutil.RepeatedPrefix(msg); w != "" {
		t.Errorf("%q says %q twice in a row", msg, w)
	}
	// A joined error says each of its errors on a line of its own (one
	// per address a link call could not bind, say): each line is one
	// message.
	for _, line := range strings.Split(msg, "\n") {
		for _, p := range []string{"proxier", "ipvs", "sysctl", "conntrack", "dummy", "ipset", "iptables", "nftables"} {
			if n := strings.Count(line, p+": "); n > 1 {
				t.Errorf("%q says %q %d times in %q", msg, p+":", n, line)
			}
		}
	}
}

// node is the node's own addresses: the node ports are served on them.
var node = proxier.Node{Addresses: []netip.Addr{addr("198.18.0.10"), addr("2001:db8::10")}}

var (
	http    = proxier.Port{Name: "http", Protocol: proxier.TCP, Port: 80, TargetPort: 8080}
	dns     = proxier.Port{Name: "dns", Protocol: proxier.UDP, Port: 53, TargetPort: 5353}
	metrics = proxier.Port{Name: "metrics", Protocol: proxier.TCP, Port: 9090}
)

func withNodePort(p proxier.Port, np int) proxier.Port { p.NodePort = np; return p }

// eps are ready endpoints: backend n is 198.18.1n.2 and 2001:db8:1n::2;
// those in local run on this node.
func eps(v4, v6 bool, ns []int, local ...int) []proxier.Endpoint {
	var out []proxier.Endpoint
	for _, n := range ns {
		l := slices.Contains(local, n)
		if v4 {
			out = append(out, proxier.Endpoint{Addr: addr(fmt.Sprintf("198.18.1%d.2", n)), Ready: true, Local: l})
		}
		if v6 {
			out = append(out, proxier.Endpoint{Addr: addr(fmt.Sprintf("2001:db8:1%d::2", n)), Ready: true, Local: l})
		}
	}
	return out
}

// stateA has a service of each kind, dual stack.
func stateA() proxier.State {
	return proxier.State{Node: node, Services: map[string]proxier.Service{
		"web": {ClusterIPs: []netip.Addr{addr("198.18.100.1"), addr("2001:db8:100::1")}, Ports: []proxier.Port{http, dns},
			Endpoints: eps(true, true, []int{1, 2, 3})},
		"np": {ClusterIPs: []netip.Addr{addr("198.18.100.2")}, Ports: []proxier.Port{withNodePort(http, 30080)},
			Endpoints: eps(true, false, []int{1, 2})},
		"lb": {ClusterIPs: []netip.Addr{addr("198.18.100.3")}, Ports: []proxier.Port{http},
			LoadBalancerIPs: []netip.Addr{addr("198.18.103.1")}, LoadBalancerSourceRanges: []netip.Prefix{netip.MustParsePrefix("198.18.20.0/24")},
			Endpoints: eps(true, false, []int{1, 2})},
		"ext": {ClusterIPs: []netip.Addr{addr("198.18.100.4")}, Ports: []proxier.Port{http}, ExternalIPs: []netip.Addr{addr("198.18.102.1")},
			ExternalTrafficPolicy: proxier.Local, Endpoints: eps(true, false, []int{1, 2}, 1)},
		"gone": {ClusterIPs: []netip.Addr{addr("198.18.100.9"), addr("2001:db8:100::9")}, Ports: []proxier.Port{dns},
			Endpoints: eps(true, true, []int{3})},
	}}
}

// stateB changes stateA in every way a State can: endpoints added and
// removed, a port added, a scheduler changed, affinity and source ranges
// added, an external IP moved, a service removed and an IPv6 one with a
// node port and a health check added. (Endpoint weights are not part of a
// State: the proxier always writes 1.)
func stateB() proxier.State {
	s := stateA()
	web := s.Services["web"]
	web.Endpoints = eps(true, true, []int{1, 2, 4})
	web.Ports = []proxier.Port{http, dns, metrics}
	s.Services["web"] = web
	np := s.Services["np"]
	np.Scheduler = "lc"
	np.Ports = []proxier.Port{withNodePort(http, 30080), withNodePort(dns, 30053)}
	s.Services["np"] = np
	lb := s.Services["lb"]
	lb.SessionAffinity = &proxier.SessionAffinity{Timeout: 600 * time.Second}
	lb.LoadBalancerSourceRanges = append(lb.LoadBalancerSourceRanges, netip.MustParsePrefix("198.18.21.0/24"))
	s.Services["lb"] = lb
	ext := s.Services["ext"]
	ext.ExternalIPs = []netip.Addr{addr("198.18.102.2")}
	ext.Endpoints = eps(true, false, []int{1, 2, 3}, 1, 3)
	s.Services["ext"] = ext
	delete(s.Services, "gone")
	s.Services["new"] = proxier.Service{ClusterIPs: []netip.Addr{addr("2001:db8:100::5")}, Ports: []proxier.Port{withNodePort(http, 30090)},
		ExternalTrafficPolicy: proxier.Local, HealthCheckNodePort: 30500, Endpoints: eps(false, true, []int{1, 2}, 2)}
	return s
}

// world is the fakes a Proxier works on, with foreign objects in them.
type world struct {
	ipvs  *ipvstest.Fake
	link  *dummytest.Fake
	sys   *sysctltest.Fake
	rules map[proxier.Family]*iptablestest.Fake
	ct    *conntracktest.Fake
}

// udpFlow is a UDP flow from client:sport to the frontend to, answered by
// from.
func udpFlow(client string, sport uint16, to, from string) conntrack.Flow {
	c, t, f := netip.AddrPortFrom(addr(client), sport), netip.MustParseAddrPort(to), netip.MustParseAddrPort(from)
	return conntrack.Flow{Protocol: conntrack.UDP, Original: conntrack.Tuple{Src: c, Dst: t}, Reply: conntrack.Tuple{Src: f, Dst: c}}
}

var (
	// flows are UDP flows to the frontends of A and B: to endpoints B
	// removes, to a service B removes, to a frontend B adds, and to one
	// that keeps its endpoint.
	flows = []conntrack.Flow{
		udpFlow("198.18.0.99", 40000, "198.18.100.1:53", "198.18.13.2:5353"),
		udpFlow("198.18.0.99", 40001, "198.18.100.1:53", "198.18.11.2:5353"),
		udpFlow("2001:db8::99", 40000, "[2001:db8:100::1]:53", "[2001:db8:13::2]:5353"),
		udpFlow("198.18.0.99", 40002, "198.18.100.9:53", "198.18.13.2:5353"),
		udpFlow("198.18.0.99", 40003, "198.18.100.2:53", "198.18.100.2:53"),
	}
	// foreignFlow is to no frontend of A or B.
	foreignFlow = udpFlow("198.18.0.99", 40004, "198.18.250.1:53", "198.18.250.1:53")
)

var (
	foreignVS = ipvs.Service{Family: ipvs.IPv4, Protocol: ipvs.TCP, Addr: addr("198.18.250.1"), Port: 443, Scheduler: "wlc"}
	// foreignNodeVS is on the node's address, at a port the States do not use.
	foreignNodeVS = ipvs.Service{Family: ipvs.IPv4, Protocol: ipvs.TCP, Addr: addr("198.18.0.10"), Port: 22, Scheduler: "sh"}
	foreignDest   = ipvs.Destination{Addr: addr("198.18.11.2"), Port: 8080, Forward: ipvs.Masq, Weight: 3}
	foreignIPVS   = []string{"-A -t 198.18.250.1:443 -s wlc", "-a -t 198.18.250.1:443 -r 198.18.11.2:8080 -m -w 3", "-A -t 198.18.0.10:22 -s sh"}
)

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{ipvs: ipvstest.New(), link: dummytest.New(), sys: sysctltest.New(""),
		rules: map[proxier.Family]*iptablestest.Fake{proxier.IPv4: iptablestest.New(iptables.IPv4), proxier.IPv6: iptablestest.New(iptables.IPv6)},
		ct:    conntracktest.New()}
	ctx := context.Background()
	for _, err := range []error{
		w.ipvs.AddService(ctx, foreignVS),
		w.ipvs.AddDestination(ctx, foreignVS.Key(), foreignDest),
		w.ipvs.AddService(ctx, foreignNodeVS),
		w.link.AddLink("eth0", "veth"),
		w.link.AddAddr("eth0", netip.MustParsePrefix("198.18.0.10/24")),
		w.link.AddAddr("eth0", netip.MustParsePrefix("2001:db8::10/64")),
		w.link.AddLink("other0", "dummy"),
		w.link.AddAddr("other0", netip.MustParsePrefix("198.18.250.1/32")),
		w.link.AddRoute("other0", addr("198.18.100.1"), dummy.RouteProtocol),
		w.ct.Add(append(slices.Clone(flows), foreignFlow)...),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	w.sys.AddInterface("eth0")
	w.sys.Put("net/ipv4/conf/eth0/rp_filter", "1")
	return w
}

func (w *world) deps() proxier.Deps {
	return proxier.Deps{IPVS: w.ipvs, Link: w.link, Sysctls: w.sys, Conntrack: w.ct,
		Rules: map[proxier.Family]proxier.Rules{proxier.IPv4: w.rules[proxier.IPv4], proxier.IPv6: w.rules[proxier.IPv6]}}
}

// dump is the whole state of the fakes: ipvsadm -Sn lines sorted (the
// kernel's order is its hash tables'), links and addresses, sysctls, each
// family's ruleset as nft text, and the conntrack table.
func (w *world) dump() string {
	return w.tables() + "### conntrack\n" + w.ct.Dump()
}

// tables is dump without the conntrack table: what the proxier programs.
func (w *world) tables() string {
	lines := strings.Split(strings.TrimSpace(w.ipvs.Dump()), "\n")
	slices.Sort(lines)
	return "### ipvs\n" + strings.Join(lines, "\n") + "\n### links\n" + w.link.Dump() + "### sysctl\n" + w.sys.Dump() +
		"### rules IPv4\n" + w.rules[proxier.IPv4].Dump() + "### rules IPv6\n" + w.rules[proxier.IPv6].Dump()
}

func (w *world) checkForeign(t *testing.T) {
	t.Helper()
	d := w.ipvs.Dump()
	for _, l := range foreignIPVS {
		if !strings.Contains(d, l+"\n") {
			t.Errorf("foreign %q gone:\n%s", l, d)
		}
	}
	if got, _ := w.link.LinkAddrs("other0"); len(got) != 1 {
		t.Errorf("foreign link's addresses: %v", got)
	}
	if got, _ := w.link.LinkRoutes("other0"); len(got) != 1 {
		t.Errorf("foreign link's routes: %v", got)
	}
	if !slices.Contains(w.ct.Flows(), foreignFlow) {
		t.Errorf("foreign flow deleted:\n%s", w.ct.Dump())
	}
	if v, _ := w.sys.Get(context.Background(), "net/ipv4/conf/eth0/rp_filter"); v != "1" {
		t.Errorf("foreign sysctl: %q", v)
	}
}

// diff shows the lines of want and got that differ.
func diff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for _, l := range wl {
		if !slices.Contains(gl, l) {
			fmt.Fprintf(&b, "-%s\n", l)
		}
	}
	for _, l := range gl {
		if !slices.Contains(wl, l) {
			fmt.Fprintf(&b, "+%s\n", l)
		}
	}
	if b.Len() == 0 {
		return "the same lines in another order; want:\n" + want + "\ngot:\n" + got
	}
	return b.String()
}
