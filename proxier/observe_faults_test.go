package proxier_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/conntrack/conntracktest"
	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/proxier/proxiertest"
	"github.com/ipvskit/ipvskit/sysctl"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// The SyncEvent of a sync that fails tells what the sync did, not what it
// planned: for every operation of each sync run below and every way it can
// fail, Ops counts what the fakes received (plus the failing request, which
// the Injector keeps from them but which was sent), and VirtualServers and
// VIPs are what the fakes hold of the proxier's. A user saw
// "ops=map[ipvs:26 addresses:6] vs=8 vips=6" from a sync whose rules
// failed first, with nothing in IPVS.
func TestSyncEventsCountWhatWasDoneOnFailure(t *testing.T) {
	for _, ec := range eventCases() {
		t.Run(ec.name, func(t *testing.T) {
			w, in, c := newCountedWorld(t)
			p, got := ec.prepare(t, w, in, c)
			if _, err := ec.run(p); err != nil {
				t.Fatalf("clean run: %v", err)
			}
			checkEvent(t, *got, w, in, c, ec, nil)
			ops := in.Ops()
			readDone := hasCall(ops, len(ops), "Rules.Apply")
			if !readDone {
				t.Fatal("the clean run applied no rules")
			}
			for _, op := range ops {
				for _, mode := range proxiertest.Modes {
					t.Run(fmt.Sprintf("%02d-%s-%v", op.Index, op.Subsystem, mode), func(t *testing.T) {
						t.Parallel()
						w, in, c := newCountedWorld(t)
						p, got := ec.prepare(t, w, in, c)
						in.FailAt(op.Index, mode)
						if _, err := ec.run(p); err == nil {
							t.Fatalf("the failure of %v was not reported", op)
						}
						ie := in.Injected()
						if ie == nil || ie.Op != op {
							t.Fatalf("the failure hit %v, want %v", ie, op)
						}
						checkEvent(t, *got, w, in, c, ec, ie)
					})
				}
			}
		})
	}
}

// eventCase is a sync run: fakes prepared by an earlier Proxier (prior, if
// set, with priorCfg), then the Proxier under test (cfg) that synced
// first (if set), then run.
type eventCase struct {
	name     string
	priorCfg proxier.Config
	prior    func() proxier.State
	cfg      proxier.Config
	first    func() proxier.State
	run      func(p *proxier.Proxier) (*proxier.Result, error)
}

func eventCases() []eventCase {
	syncTo := func(s func() proxier.State) func(p *proxier.Proxier) (*proxier.Result, error) {
		return func(p *proxier.Proxier) (*proxier.Result, error) {
			st := s()
			return p.Sync(context.Background(), &st)
		}
	}
	update := func(p *proxier.Proxier) (*proxier.Result, error) {
		return p.Update(context.Background(), changesBetween(stateA(), stateB()))
	}
	return []eventCase{
		{name: "FirstSync", cfg: dualStack, run: syncTo(stateA)},
		{name: "Update", cfg: dualStack, first: stateA, run: syncTo(stateB)},
		{name: "UpdateByID", cfg: dualStack, first: stateA, run: update},
		{name: "RestartWithOtherRulesOptions", priorCfg: dualStack, prior: stateA, cfg: changed, run: syncTo(stateB)},
		{name: "FirstSyncRoutes", cfg: routes, run: syncTo(stateA)},
		{name: "UpdateByIDRoutes", cfg: routes, first: stateA, run: update},
		{name: "RestartFromAddressesToRoutes", priorCfg: dualStack, prior: stateA, cfg: routes, run: syncTo(stateB)},
		{name: "RestartFromRoutesToAddresses", priorCfg: routes, prior: stateA, cfg: dualStack, run: syncTo(stateB)},
		{name: "RestartToRoutesSameState", priorCfg: dualStack, prior: stateB, cfg: routes, run: syncTo(stateB)},
	}
}

// prepare brings w to the run's start and returns the Proxier under test,
// over the counting fakes wrapped by in, and where its Observer puts the
// last SyncEvent; in and c are reset.
func (ec eventCase) prepare(t *testing.T, w *world, in *proxiertest.Injector, c *counts) (*proxier.Proxier, **proxier.SyncEvent) {
	t.Helper()
	ctx := context.Background()
	if ec.prior != nil {
		p, err := proxier.New(&ec.priorCfg, w.deps())
		must(t, err)
		s := ec.prior()
		_, err = p.Sync(ctx, &s)
		must(t, err)
	}
	last := new(*proxier.SyncEvent)
	cfg := ec.cfg
	cfg.Observer = proxier.ObserverFunc(func(e proxier.Event) {
		if se, ok := e.(*proxier.SyncEvent); ok {
			*last = se
		}
	})
	p, err := proxier.New(&cfg, in.Wrap(c.deps(w)))
	must(t, err)
	if ec.first != nil {
		s := ec.first()
		_, err := p.Sync(ctx, &s)
		must(t, err)
	}
	in.Reset()
	*c = counts{}
	c.servers, c.vips = ownedServers(w), ownedVIPs(w, ec.cfg.VIPMode)
	*last = nil
	return p, last
}

// checkEvent checks the last SyncEvent against what the counting fakes
// received and hold. ie is the injected failure (nil for a clean run).
func checkEvent(t *testing.T, ev *proxier.SyncEvent, w *world, in *proxiertest.Injector, c *counts, ec eventCase, ie *proxiertest.InjectedError) {
	t.Helper()
	if ev == nil {
		t.Fatal("no SyncEvent")
	}
	// The failing request was sent, though the Injector kept it from the
	// fakes; under LoseReply they got it.
	failed := func(calls ...string) int {
		if ie == nil || ie.Mode == proxiertest.LoseReply {
			return 0
		}
		for _, call := range calls {
			if ie.Op.Call == call {
				return 1
			}
		}
		return 0
	}
	want := map[proxier.Subsystem]int{
		proxier.SubsystemIPVS:      c.ipvs + failed("IPVS.Apply"),
		proxier.SubsystemAddresses: c.addrs + failed("Link.Update", "Link.UpdateRoutes"),
		proxier.SubsystemRules:     c.rules + failed("Rules.Apply"),
		proxier.SubsystemSets:      0, // the Injector's back ends report no statistics
		proxier.SubsystemSysctl:    c.sysctls,
		proxier.SubsystemConntrack: c.flows,
	}
	if ie != nil && ie.Op.Call == "Sysctls.Apply" {
		// The changes are the client's answer: lost or never made.
		want[proxier.SubsystemSysctl] = 0
	}
	for s, n := range want {
		if ev.Ops[s] != n {
			t.Errorf("Ops[%s] = %d, want %d (what the fakes received): ops %v", s, ev.Ops[s], n, ev.Ops)
		}
	}
	ops := in.Ops()
	servers, vips := heldAfter(w, ec.cfg.VIPMode, c, ie, ops)
	unsure := false
	switch {
	case ie == nil:
	case ec.first == nil && !hasCall(ops, ie.Op.Index+1, "Rules.Apply"):
		// A new Proxier that failed before its read back knows of
		// nothing: it applied nothing.
		unsure, servers, vips = true, 0, 0
	case ec.cfg.VIPMode == proxier.VIPLocalRoutes && (ie.Op.Call == "Link.Update" ||
		ie.Op.Call == "Link.UpdateRoutes" && hasCall(ops, ie.Op.Index, "Link.Update")):
		// The removal of the old mode's addresses failed, or adding
		// back the routes it took: which routes are left, the proxier
		// cannot tell.
		vips, unsure = ev.VIPs, true
	}
	if ev.VirtualServers != servers || ev.VIPs != vips || ev.Unsure != unsure {
		t.Errorf("event says vs=%d vips=%d unsure=%v; the fakes hold vs=%d vips=%d of the proxier's, unsure %v",
			ev.VirtualServers, ev.VIPs, ev.Unsure, servers, vips, unsure)
	}
}

// hasCall says whether one of the first n ops is a call of call: a sync
// applies rules first once it has read the kernel back.
func hasCall(ops []proxiertest.Op, n int, call string) bool {
	for _, o := range ops[:min(n, len(ops))] {
		if o.Call == call {
			return true
		}
	}
	return false
}

// heldAfter is what the fakes hold of the proxier's after the run, as the
// proxier can know it: a request whose reply was lost (LoseReply) took
// effect, but the proxier was told it failed, so it is taken back here.
func heldAfter(w *world, mode proxier.VIPMode, c *counts, ie *proxiertest.InjectedError, ops []proxiertest.Op) (int, int) {
	servers, vips := ownedServers(w), ownedVIPs(w, mode)
	if ie == nil || ie.Mode != proxiertest.LoseReply {
		return len(servers), len(vips)
	}
	flip := func(set, before map[string]bool, key string, added bool) {
		switch {
		case added && !before[key] && set[key]:
			delete(set, key)
		case !added && before[key] && !set[key]:
			set[key] = true
		}
	}
	desc := ie.Op.Desc
	if ie.Op.Call == "IPVS.Apply" {
		if k, ok := strings.CutPrefix(desc, "add service "); ok {
			flip(servers, c.servers, k, true)
		} else if k, ok := strings.CutPrefix(desc, "delete service "); ok {
			flip(servers, c.servers, k, false)
		}
	}
	// This mode's VIPs, bound or unbound by the plan: not the other
	// mode's removal, nor the routes VIPLocalRoutes adds again after it
	// (a Link.Update before them).
	call, add, del := "Link.Update", "bind ", "unbind "
	if mode == proxier.VIPLocalRoutes {
		call, add, del = "Link.UpdateRoutes", "add route ", "remove route "
		if hasCall(ops, ie.Op.Index, "Link.Update") {
			call = ""
		}
	}
	if ie.Op.Call == call {
		a, _, _ := strings.Cut(desc, " on ")
		if k, ok := strings.CutPrefix(a, add); ok {
			flip(vips, c.vips, k, true)
		} else if k, ok := strings.CutPrefix(a, del); ok {
			flip(vips, c.vips, k, false)
		}
	}
	return len(servers), len(vips)
}

// ownedServers are the fake's virtual servers but the foreign ones, by key.
func ownedServers(w *world) map[string]bool {
	svcs, _ := w.ipvs.Services(context.Background())
	out := map[string]bool{}
	for _, si := range svcs {
		if k := si.Service.Key(); k != foreignVS.Key() && k != foreignNodeVS.Key() {
			out[k.String()] = true
		}
	}
	return out
}

// ownedVIPs are the VIPs held on the proxier's link in mode.
func ownedVIPs(w *world, mode proxier.VIPMode) map[string]bool {
	out := map[string]bool{}
	if mode == proxier.VIPLocalRoutes {
		rs, _ := w.link.LinkRoutes(proxier.DefaultLinkName)
		for _, r := range rs {
			out[r.Addr.String()] = true
		}
		return out
	}
	ps, _ := w.link.LinkAddrs(proxier.DefaultLinkName)
	for _, p := range ps {
		out[p.Addr().String()] = true
	}
	return out
}

// counts is what the fakes received through the counting wrappers, and
// what they held of the proxier's when the run started.
type counts struct {
	ipvs, addrs, rules, sysctls, flows int
	servers, vips                      map[string]bool
}

func newCountedWorld(t *testing.T) (*world, *proxiertest.Injector, *counts) {
	return newWorld(t), proxiertest.New(), &counts{}
}

// deps are w's fakes, counting what reaches them.
func (c *counts) deps(w *world) proxier.Deps {
	return proxier.Deps{IPVS: countedIPVS{w.ipvs, c}, Link: countedLink{w.link, c}, Sysctls: countedSysctls{w.sys, c},
		Conntrack: countedConntrack{w.ct, c},
		Rules: map[proxier.Family]proxier.Rules{proxier.IPv4: countedRules{w.rules[proxier.IPv4], c},
			proxier.IPv6: countedRules{w.rules[proxier.IPv6], c}}}
}

type countedIPVS struct {
	*ipvstest.Fake
	c *counts
}

func (f countedIPVS) Apply(ctx context.Context, b *ipvs.Batch) error {
	if b.Err() == nil {
		f.c.ipvs += b.Len()
	}
	return f.Fake.Apply(ctx, b)
}

type countedLink struct {
	*dummytest.Fake
	c *counts
}

func (f countedLink) Update(ctx context.Context, name string, add, remove []netip.Addr) error {
	f.c.addrs += len(add) + len(remove)
	return f.Fake.Update(ctx, name, add, remove)
}

func (f countedLink) UpdateRoutes(ctx context.Context, name string, add, remove []netip.Addr) error {
	f.c.addrs += len(add) + len(remove)
	return f.Fake.UpdateRoutes(ctx, name, add, remove)
}

type countedRules struct {
	*iptablestest.Fake
	c *counts
}

func (f countedRules) Apply(ctx context.Context, r *iptables.Ruleset) error {
	f.c.rules++
	return f.Fake.Apply(ctx, r)
}

type countedSysctls struct {
	*sysctltest.Fake
	c *counts
}

func (f countedSysctls) Apply(ctx context.Context, p sysctl.Profile) ([]sysctl.Change, error) {
	ch, err := f.Fake.Apply(ctx, p)
	f.c.sysctls += len(ch)
	return ch, err
}

type countedConntrack struct {
	*conntracktest.Fake
	c *counts
}

func (f countedConntrack) Delete(ctx context.Context, filters ...conntrack.Filter) (int, error) {
	n, err := f.Fake.Delete(ctx, filters...)
	f.c.flows += n
	return n, err
}
