package proxier

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/sysctl"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// counting wraps the fakes and counts every call that reaches the kernel's
// stand-in; failNext makes the next IPVS Apply fail after doing its work
// partly (the first op only), as a kernel batch cut short would.
type counting struct {
	*ipvstest.Fake
	calls    int
	requests int
	failNext bool
}

func (c *counting) Apply(ctx context.Context, b *ipvs.Batch) error {
	c.calls++
	c.requests += b.Len()
	if c.failNext {
		c.failNext = false
		var first ipvs.Batch
		op := b.Ops()[0]
		switch op.Kind {
		case ipvs.OpAddService:
			first.AddService(op.Service)
		case ipvs.OpAddDestination:
			first.AddDestination(op.Service.Key(), op.Destination)
		}
		c.Fake.Apply(ctx, &first)
		return errors.New("injected failure")
	}
	return c.Fake.Apply(ctx, b)
}

func (c *counting) Services(ctx context.Context) ([]ipvs.ServiceInfo, error) {
	c.calls++
	return c.Fake.Services(ctx)
}

func (c *counting) Destinations(ctx context.Context, k ipvs.ServiceKey) ([]ipvs.DestinationInfo, error) {
	c.calls++
	return c.Fake.Destinations(ctx, k)
}

type countingLink struct {
	*dummytest.Fake
	calls int
}

func (l *countingLink) Update(ctx context.Context, name string, add, remove []netip.Addr) error {
	l.calls++
	return l.Fake.Update(ctx, name, add, remove)
}

func (l *countingLink) Addrs(ctx context.Context, name string) ([]netip.Prefix, error) {
	l.calls++
	return l.Fake.Addrs(ctx, name)
}

// fakeRules records the rulesets applied to it. drift is what Check
// reports, until a Repair clears it.
type fakeRules struct {
	applied []*iptables.Ruleset
	fail    bool
	cleaned int
	drift   []iptables.ObjectDrift
	checks  int
	repairs int
	// failRepair makes the next Repair fail.
	failRepair bool
	// mem is what the kernel holds (Owned reads its ledger).
	mem *iptablestest.Fake
}

func (f *fakeRules) Check(ctx context.Context) ([]iptables.ObjectDrift, error) {
	f.checks++
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return slices.Clone(f.drift), nil
}

func (f *fakeRules) Repair(ctx context.Context) error {
	f.repairs++
	if f.failRepair {
		f.failRepair = false
		return errors.New("injected repair failure")
	}
	f.drift = nil
	return nil
}

func (f *fakeRules) Apply(ctx context.Context, r *iptables.Ruleset) error {
	if f.fail {
		f.fail = false
		return errors.New("injected rules failure")
	}
	f.applied = append(f.applied, r.Clone())
	if f.mem == nil {
		f.mem = iptablestest.New(r.Family)
	}
	return f.mem.Apply(ctx, r)
}

func (f *fakeRules) Render(r *iptables.Ruleset) (string, error) {
	return iptables.RenderNFT(r, iptables.DefaultTable)
}

func (f *fakeRules) Cleanup(ctx context.Context) error {
	f.cleaned++
	if f.mem == nil {
		return ctx.Err()
	}
	return f.mem.Cleanup(ctx)
}

// Owned reads the ledger of what the "kernel" holds.
func (f *fakeRules) Owned(ctx context.Context) (*iptables.Ruleset, error) {
	if f.mem == nil {
		return nil, ctx.Err()
	}
	return f.mem.Owned(ctx)
}

func (f *fakeRules) last() *iptables.Ruleset {
	if len(f.applied) == 0 {
		return nil
	}
	return f.applied[len(f.applied)-1]
}

type rig struct {
	p     *Proxier
	ipvs  *counting
	link  *countingLink
	sys   *sysctltest.Fake
	rules *fakeRules
}

func newRig(t testing.TB, c *Config) *rig {
	t.Helper()
	r := &rig{ipvs: &counting{Fake: ipvstest.New()}, link: &countingLink{Fake: dummytest.New()}, sys: sysctltest.New(""), rules: &fakeRules{}}
	p, err := New(c, Deps{IPVS: r.ipvs, Link: r.link, Sysctls: r.sys, Rules: map[Family]Rules{IPv4: r.rules}})
	if err != nil {
		t.Fatal(err)
	}
	r.p = p
	return r
}

func (r *rig) sync(t *testing.T, s State) *Result {
	t.Helper()
	res, err := r.p.Sync(context.Background(), &s)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestFirstSyncBuildsEverythingAndANoOpSyncSendsNothing(t *testing.T) {
	r := newRig(t, nil)
	res := r.sync(t, oneService())
	if !res.LinkCreated || len(res.SysctlChanges) == 0 {
		t.Errorf("first sync: link created %v, sysctl changes %v", res.LinkCreated, res.SysctlChanges)
	}
	want := "-A -t 198.18.100.1:80 -s rr\n" +
		"-a -t 198.18.100.1:80 -r 198.18.1.1:8080 -m -w 1\n" +
		"-a -t 198.18.100.1:80 -r 198.18.1.2:8080 -m -w 1\n"
	if got := r.ipvs.Dump(); got != want {
		t.Errorf("ipvs:\n%s\nwant:\n%s", got, want)
	}
	if addrs, _ := r.link.LinkAddrs(DefaultLinkName); len(addrs) != 1 || addrs[0] != netip.MustParsePrefix("198.18.100.1/32") {
		t.Errorf("VIP link addresses %v", addrs)
	}

	rs := r.rules.last()
	if len(r.rules.applied) != 1 || !rs.Has(iptables.ClusterIPSet, iptables.AddrPort(a("198.18.100.1"), iptables.TCP, 80)) ||
		!rs.Has(iptables.IPVSIPs, iptables.Addr(a("198.18.100.1"))) {
		t.Errorf("rules applied %d times; last: %v", len(r.rules.applied), rs)
	}

	ipvsCalls, linkCalls, sysWrites, ruleApplies := r.ipvs.calls, r.link.calls, r.sys.Writes(), len(r.rules.applied)
	res = r.sync(t, oneService())
	if !res.Plan.Empty() || r.ipvs.calls != ipvsCalls || r.link.calls != linkCalls || r.sys.Writes() != sysWrites || len(r.rules.applied) != ruleApplies {
		t.Errorf("a no-op sync touched the kernel: ipvs %d->%d, link %d->%d, sysctl writes %d->%d",
			ipvsCalls, r.ipvs.calls, linkCalls, r.link.calls, sysWrites, r.sys.Writes())
	}
}

func TestInvalidStateTouchesNothing(t *testing.T) {
	r := newRig(t, nil)
	s := oneService()
	web := s.Services["web"]
	web.Ports[0].NodePort = 70000
	s.Services["web"] = web
	_, err := r.p.Sync(context.Background(), &s)
	var ve *ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), `services["web"].ports[0].nodePort: 70000`) {
		t.Fatalf("err = %v", err)
	}
	if r.ipvs.calls != 0 || r.link.calls != 0 || len(r.link.Links()) != 0 || r.sys.Writes() != 0 {
		t.Errorf("invalid state touched the kernel: ipvs %d, link %d (%v), sysctl writes %d", r.ipvs.calls, r.link.calls, r.link.Links(), r.sys.Writes())
	}
}

func TestAFailedApplyIsRepairedByTheNextSync(t *testing.T) {
	r := newRig(t, nil)
	r.ipvs.failNext = true
	if _, err := r.p.Sync(context.Background(), ptr(oneService())); err == nil {
		t.Fatal("injected failure not reported")
	}
	r.sync(t, oneService())

	clean := newRig(t, nil)
	clean.sync(t, oneService())
	if got, want := r.ipvs.Dump(), clean.ipvs.Dump(); got != want {
		t.Errorf("after repair:\n%s\nwant:\n%s", got, want)
	}
	if got, want := r.link.Dump(), clean.link.Dump(); got != want {
		t.Errorf("link after repair:\n%s\nwant:\n%s", got, want)
	}
}

func TestForeignVirtualServersAreNeverTouched(t *testing.T) {
	r := newRig(t, nil)
	foreign := ipvs.Service{Protocol: ipvs.TCP, Addr: a("198.18.250.1"), Port: 443, Scheduler: "wlc"}
	if err := r.ipvs.Fake.AddService(context.Background(), foreign); err != nil {
		t.Fatal(err)
	}
	r.sync(t, oneService())
	r.sync(t, State{})
	if got := r.ipvs.Dump(); got != "-A -t 198.18.250.1:443 -s wlc\n" {
		t.Errorf("after syncing everything away, ipvs holds:\n%s", got)
	}
	r.sync(t, oneService())
	if err := r.p.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := r.ipvs.Dump(); got != "-A -t 198.18.250.1:443 -s wlc\n" {
		t.Errorf("after Cleanup, ipvs holds:\n%s", got)
	}
	if links := r.link.Links(); len(links) != 0 || r.rules.cleaned != 1 {
		t.Errorf("after Cleanup: links %v, rules cleaned %d times", links, r.rules.cleaned)
	}
}

func TestPlanIsADryRun(t *testing.T) {
	r := newRig(t, nil)
	pl, err := r.p.Plan(ptr(oneService()))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pl.String(), "-A -t 198.18.100.1:80 -s rr") || !strings.Contains(pl.String(), "ip addr add 198.18.100.1/32 dev ipvskit0") || r.ipvs.calls != 0 || len(r.link.Links()) != 0 {
		t.Errorf("plan %q; ipvs calls %d; links %v", pl.String(), r.ipvs.calls, r.link.Links())
	}
}

func ptr[T any](v T) *T { return &v }

func TestDualStackTurnsOnIPv6Forwarding(t *testing.T) {
	for _, fams := range [][]Family{{IPv4}, {IPv4, IPv6}} {
		sys := sysctltest.New("")
		rules := map[Family]Rules{IPv4: &fakeRules{}, IPv6: &fakeRules{}}
		p, err := New(&Config{Families: fams}, Deps{IPVS: ipvstest.New(), Link: dummytest.New(), Sysctls: sys, Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		s := oneService()
		res, err := p.Sync(context.Background(), &s)
		if err != nil {
			t.Fatal(err)
		}
		v6 := len(fams) == 2
		got, _ := sys.Get(context.Background(), "net/ipv6/conf/all/forwarding")
		if changed := slices.ContainsFunc(res.SysctlChanges, func(c sysctl.Change) bool {
			return c.Key == "net/ipv6/conf/all/forwarding" && c.New == "1"
		}); changed != v6 || (got == "1") != v6 {
			t.Errorf("families %v: IPv6 forwarding %q, reported as changed %v; want it on only with IPv6", fams, got, changed)
		}
	}
}

func TestASyncAfterAFailureRecreatesADeletedVIPLink(t *testing.T) {
	r := newRig(t, nil)
	r.sync(t, oneService())
	r.ipvs.failNext = true
	s := oneService()
	web := s.Services["web"]
	web.Endpoints = append(web.Endpoints, Endpoint{Addr: a("198.18.1.3"), Ready: true})
	s.Services["web"] = web
	if _, err := r.p.Sync(context.Background(), &s); err == nil {
		t.Fatal("injected failure not reported")
	}
	if err := r.link.Fake.Delete(context.Background(), DefaultLinkName); err != nil {
		t.Fatal(err)
	}
	res := r.sync(t, s)
	if !res.LinkCreated {
		t.Error("the VIP link was not re-created")
	}
	if addrs, _ := r.link.LinkAddrs(DefaultLinkName); len(addrs) != 1 {
		t.Errorf("VIP link addresses %v", addrs)
	}
}
