package agent

import (
	"context"
	"flag"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ipvskit/ipvskit/kube/convert"
	"github.com/ipvskit/ipvskit/kube/internal/walk"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/proxier/proxiertest"
)

var walkSteps = flag.Int("walk.steps", 2000, "steps of the agent's walk (TestAgentWalk)")

// fedAgent is an agent whose informers' caches the test fills, driven by
// calling its handler and its sync directly, on the fakes.
type fedAgent struct {
	a     *Agent
	fakes *proxiertest.FakeDeps
	clock *clocktesting.FakeClock
}

func walkConfig() *Config {
	c := DefaultConfig()
	c.ExcludeCIDRs = []netip.Prefix{netip.MustParsePrefix("198.18.1.7/32")}
	return c
}

func walkNode(zone string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: walk.NodeName, ResourceVersion: zone,
		Labels: map[string]string{LabelZone: zone}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: walk.NodeIPv4},
			{Type: corev1.NodeInternalIP, Address: walk.NodeIPv6}}}}
}

// fedSetup is what newFedAgent makes an agent with; zero fields are the
// walk's.
type fedSetup struct {
	config *Config
	fams   []proxier.Family
	node   *corev1.Node
	svcs   []*corev1.Service
	slices []*discoveryv1.EndpointSlice
	// wrap, if set, wraps the fakes (a proxiertest.Injector's Wrap).
	wrap func(proxier.Deps) proxier.Deps
}

// newFedAgent makes an agent for node holding svcs and slices, with its
// Proxier on fresh fakes; nothing is synced.
func newFedAgent(t testing.TB, node *corev1.Node, svcs []*corev1.Service, sls []*discoveryv1.EndpointSlice) *fedAgent {
	t.Helper()
	return newFed(t, fedSetup{node: node, svcs: svcs, slices: sls})
}

func newFed(t testing.TB, fs fedSetup) *fedAgent {
	t.Helper()
	f := &fedAgent{clock: clocktesting.NewFakeClock(time.Unix(1_000_000, 0))}
	if fs.config == nil {
		fs.config = walkConfig()
	}
	if fs.fams == nil {
		fs.fams = []proxier.Family{proxier.IPv4, proxier.IPv6}
	}
	var addrs []netip.Addr
	for _, a := range fs.node.Status.Addresses {
		addrs = append(addrs, netip.MustParseAddr(a.Address))
	}
	o := Options{
		Config: fs.config, NodeName: fs.node.Name, Client: fake.NewClientset(), Clock: f.clock,
		Proxier: proxier.Config{Families: fs.fams},
		NewProxier: func(cfg *proxier.Config) (*proxier.Proxier, error) {
			f.fakes = proxiertest.NewFakeDeps(cfg)
			d := f.fakes.Deps()
			if fs.wrap != nil {
				d = fs.wrap(d)
			}
			return proxier.New(cfg, d)
		},
		NodeAddresses: func() ([]netip.Addr, error) { return addrs, nil },
		Logger:        slog.New(slog.DiscardHandler),
	}
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	f.a = a
	f.store(kindNode, fs.node, false)
	for _, s := range fs.svcs {
		f.store(kindService, s, false)
	}
	for _, s := range fs.slices {
		f.store(kindSlice, s, false)
	}
	if err := a.makeProxier(fs.node); err != nil {
		t.Fatal(err)
	}
	return f
}

// store puts obj into (or, with del, takes it out of) its informer's cache.
func (f *fedAgent) store(kind string, obj any, del bool) {
	inf := f.a.src.node.Core().V1().Nodes().Informer()
	switch kind {
	case kindService:
		inf = f.a.src.objects.Core().V1().Services().Informer()
	case kindSlice:
		inf = f.a.src.objects.Discovery().V1().EndpointSlices().Informer()
	}
	if del {
		inf.GetIndexer().Delete(obj)
	} else {
		inf.GetIndexer().Update(obj)
	}
}

// event is what an informer does on a change: the cache, then the handler.
func (f *fedAgent) event(kind string, obj any, del bool) {
	f.store(kind, obj, del)
	f.a.changed(kind, obj)
}

func (f *fedAgent) sync(t testing.TB) {
	t.Helper()
	if err := f.a.sync(context.Background()); err != nil {
		t.Fatalf("sync: %v", err)
	}
}

// dump is what the fakes hold: IPVS, the VIP link and each family's rules.
func (f *fedAgent) dump() map[string]string {
	d := map[string]string{"ipvs": f.fakes.IPVS.Dump(), "link": f.fakes.Link.Dump()}
	for fam, r := range f.fakes.Rules {
		d["rules "+fam.String()] = r.Dump()
	}
	return d
}

// TestAgentWalk drives an agent through a random walk of Service and
// EndpointSlice events (package walk: every kind the converter knows),
// a few events per sync as minSyncPeriod batches them, with a change of
// the Node and a periodic resync now and then. After each sync, what its
// Proxier's fakes hold equals what a fresh agent's first sync of the same
// cluster puts in its own, its converter's report of what it skipped
// equals convert.Convert's, and its own reports and health-check ports
// equal the fresh agent's.
func TestAgentWalk(t *testing.T) {
	w := walk.New(42)
	zone := walk.Zone
	f := newFedAgent(t, walkNode(zone), nil, nil)
	f.sync(t)
	var updates, wholes int
	for step, syncs := 0, 0; step < *walkSteps; syncs++ {
		var evs []walk.Event
		for range 1 + w.Intn(3) {
			ev := w.Next()
			evs = append(evs, ev)
			if ev.Service != nil {
				f.event(kindService, ev.Service, ev.Delete)
			} else {
				f.event(kindSlice, ev.Slice, ev.Delete)
			}
			step++
		}
		switch {
		case syncs%40 == 39:
			zone = map[string]string{walk.Zone: "zone-b", "zone-b": walk.Zone}[zone]
			f.event(kindNode, walkNode(zone), false)
		case syncs%35 == 34:
			f.clock.Step(f.a.o.Config.SyncPeriod)
		}
		f.clock.Step(time.Millisecond) // so that a whole sync moves lastWhole
		before := f.a.lastWhole
		f.sync(t)
		whole := !f.a.lastWhole.Equal(before)
		if wantWhole := syncs%40 == 39 || syncs%35 == 34; whole != wantWhole {
			t.Fatalf("sync %d: whole %v, want %v", syncs, whole, wantWhole)
		}
		if whole {
			wholes++
		} else {
			updates++
		}

		// Destinations removed drain first (weight 0 until idle); on the
		// fakes nothing is connected, so Drain deletes them at once.
		if _, err := f.a.p.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		fresh := newFedAgent(t, walkNode(zone), w.Services(), w.Slices())
		fresh.sync(t)
		if d := cmp.Diff(fresh.dump(), f.dump()); d != "" {
			t.Fatalf("step %d (%v): the fakes (-fresh +fed):\n%s", step, evs, d)
		}
		n, _ := fresh.a.convertNode()
		_, skipped := convert.Convert(convert.Input{Services: w.Services(), Slices: w.Slices(), Node: n})
		if d := cmp.Diff(skipped, f.a.conv.Skipped()); d != "" {
			t.Fatalf("step %d (%v): skipped (-Convert +fed):\n%s", step, evs, d)
		}
		if d := cmp.Diff(fresh.a.own.count, f.a.own.count, cmp.AllowUnexported(report{})); d != "" {
			t.Fatalf("step %d (%v): the agent's reports (-fresh +fed):\n%s", step, evs, d)
		}
		if d := cmp.Diff(fresh.a.hc, f.a.hc, cmp.AllowUnexported(healthCheck{})); d != "" {
			t.Fatalf("step %d (%v): health checks (-fresh +fed):\n%s", step, evs, d)
		}
	}
	if updates < wholes*5 {
		t.Errorf("%d Updates and %d whole Syncs: the walk hardly took the incremental path", updates, wholes)
	}
	t.Logf("%d syncs: %d Updates, %d whole", updates+wholes, updates, wholes)
}
