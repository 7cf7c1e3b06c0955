package proxier

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
)

// reconcileState is oneService plus a sticky service and a node port, so
// that every kind of object can drift.
func reconcileState() State {
	s := oneService()
	s.Node = Node{Addresses: []netip.Addr{a("198.18.0.10")}}
	s.Services["sticky"] = Service{
		ClusterIPs:      []netip.Addr{a("198.18.100.2")},
		Ports:           []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: 8080, NodePort: 30080}},
		SessionAffinity: &SessionAffinity{},
		Endpoints:       []Endpoint{{Addr: a("198.18.1.3"), Ready: true}},
	}
	return s
}

func webKey() ipvs.ServiceKey {
	return ipvs.ServiceKey{Family: ipvs.IPv4, Protocol: ipvs.TCP, Addr: a("198.18.100.1"), Port: 80}
}

func webDest(addr string) ipvs.Destination {
	return ipvs.Destination{Addr: a(addr), Family: ipvs.IPv4, Port: 8080, Forward: ipvs.Masq, Weight: 1}
}

// wantReport fails t unless rep lists exactly want (Drift.String forms).
func wantReport(t *testing.T, rep *ReconcileReport, want ...string) {
	t.Helper()
	var got []string
	for _, d := range rep.Drift {
		got = append(got, d.String())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("reconcile report:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func (r *rig) reconcile(t *testing.T) *ReconcileReport {
	t.Helper()
	rep, err := r.p.Reconcile(context.Background())
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return rep
}

// snapshot is every fake's state, to compare before tampering and after
// the repair. The link's lines are sorted: a re-created link comes last.
func (r *rig) snapshot() string {
	links := strings.Split(strings.TrimSpace(r.link.Dump()), "\n")
	slices.Sort(links)
	return r.ipvs.Dump() + "--\n" + strings.Join(links, "\n") + "\n--\n" + r.sys.Dump()
}

// Each tampering case of the kernel is reported as exactly that drift,
// repaired to the state of the sync, and a second Reconcile finds nothing
// and writes nothing.
func TestReconcileRepairsEachDrift(t *testing.T) {
	web := "virtual server tcp 198.18.100.1:80"
	for _, c := range []struct {
		name   string
		tamper func(t *testing.T, r *rig)
		want   []string
	}{
		{"virtual server deleted", func(t *testing.T, r *rig) {
			must(t, r.ipvs.Fake.DeleteService(context.Background(), webKey()))
		}, []string{"ipvs: " + web + ": missing"}},
		{"virtual server changed", func(t *testing.T, r *rig) {
			must(t, r.ipvs.Fake.UpdateService(context.Background(), ipvs.Service{Family: ipvs.IPv4, Protocol: ipvs.TCP,
				Addr: a("198.18.100.1"), Port: 80, Scheduler: "wlc", Persistence: ipvs.Persistence{Timeout: time.Hour}}))
		}, []string{"ipvs: " + web + ": scheduler wlc, want rr; persistence 1h0m0s, want 0s"}},
		{"persistence removed", func(t *testing.T, r *rig) {
			must(t, r.ipvs.Fake.UpdateService(context.Background(), ipvs.Service{Family: ipvs.IPv4, Protocol: ipvs.TCP,
				Addr: a("198.18.100.2"), Port: 80, Scheduler: "rr"}))
		}, []string{"ipvs: virtual server tcp 198.18.100.2:80: persistence 0s, want 3h0m0s"}},
		{"destinations deleted, changed and added", func(t *testing.T, r *rig) {
			ctx := context.Background()
			must(t, r.ipvs.Fake.DeleteDestination(ctx, webKey(), webDest("198.18.1.1").Key()))
			d := webDest("198.18.1.2")
			d.Weight, d.UpperThreshold = 5, 100
			must(t, r.ipvs.Fake.UpdateDestination(ctx, webKey(), d))
			must(t, r.ipvs.Fake.AddDestination(ctx, webKey(), webDest("198.18.1.9")))
		}, []string{
			"ipvs: destination tcp 198.18.100.1:80 -> 198.18.1.1:8080: missing",
			"ipvs: destination tcp 198.18.100.1:80 -> 198.18.1.2:8080: weight 5, want 1; upper threshold 100, want 0",
			"ipvs: destination tcp 198.18.100.1:80 -> 198.18.1.9:8080: not applied",
		}},
		{"node port deleted", func(t *testing.T, r *rig) {
			k := ipvs.ServiceKey{Family: ipvs.IPv4, Protocol: ipvs.TCP, Addr: a("198.18.0.10"), Port: 30080}
			must(t, r.ipvs.Fake.DeleteService(context.Background(), k))
		}, []string{"ipvs: virtual server tcp 198.18.0.10:30080: missing"}},
		{"VIP unbound", func(t *testing.T, r *rig) {
			must(t, r.link.Fake.Unbind(context.Background(), DefaultLinkName, a("198.18.100.2")))
		}, []string{"addresses: address 198.18.100.2 on ipvskit0: missing"}},
		{"link deleted", func(t *testing.T, r *rig) {
			must(t, r.link.Fake.Delete(context.Background(), DefaultLinkName))
		}, []string{
			"addresses: link ipvskit0: missing",
			"addresses: address 198.18.100.1 on ipvskit0: missing",
			"addresses: address 198.18.100.2 on ipvskit0: missing",
		}},
		{"rules", func(t *testing.T, r *rig) {
			r.rules.drift = []iptables.ObjectDrift{{Object: "set ip ipvskit cluster-ip", Problem: "2 members missing", Missing: 2}}
		}, []string{"sets IPv4: set ip ipvskit cluster-ip: 2 members missing"}},
		{"sysctl", func(t *testing.T, r *rig) {
			r.sys.Put("net/ipv4/vs/conntrack", "0")
			r.sys.Put("net.ipv4.ip_forward", "0")
		}, []string{
			`sysctl: net/ipv4/vs/conntrack: "0", want "1"`,
			`sysctl: net/ipv4/ip_forward: "0", want "1"`,
		}},
		{"everything at once", func(t *testing.T, r *rig) {
			ctx := context.Background()
			r.sys.Put("net/ipv4/vs/conntrack", "0")
			r.rules.drift = []iptables.ObjectDrift{{Object: "table ip ipvskit", Problem: "missing"}}
			must(t, r.link.Fake.Delete(ctx, DefaultLinkName))
			must(t, r.ipvs.Fake.DeleteService(ctx, webKey()))
		}, []string{
			`sysctl: net/ipv4/vs/conntrack: "0", want "1"`,
			"rules IPv4: table ip ipvskit: missing",
			"addresses: link ipvskit0: missing",
			"ipvs: " + web + ": missing",
			"addresses: address 198.18.100.1 on ipvskit0: missing",
			"addresses: address 198.18.100.2 on ipvskit0: missing",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, nil)
			r.sync(t, reconcileState())
			// Foreign objects: a virtual server elsewhere, an address on
			// another link.
			ctx := context.Background()
			must(t, r.ipvs.Fake.AddService(ctx, foreignVS))
			must(t, r.link.Fake.AddLink("eth9", "veth"))
			must(t, r.link.Fake.AddAddr("eth9", netip.MustParsePrefix("198.18.100.60/32")))
			want := r.snapshot()
			c.tamper(t, r)
			if r.snapshot() == want && r.rules.drift == nil {
				t.Fatal("the tampering changed nothing; the test proves nothing")
			}
			applies := len(r.rules.applied)
			wantReport(t, r.reconcile(t), c.want...)
			if got := r.snapshot(); got != want {
				t.Fatalf("after Reconcile (-want +got):\n%s", lineDiff(want, got))
			}
			if len(r.rules.applied) != applies {
				t.Errorf("Reconcile re-applied rules instead of repairing them")
			}
			if wantRepair := slices.ContainsFunc(c.want, func(s string) bool { return strings.HasPrefix(s, "rules") || strings.HasPrefix(s, "sets") }); (r.rules.repairs == 1) != wantRepair {
				t.Errorf("rules repaired %d times", r.rules.repairs)
			}
			ipvsCalls, linkCalls, writes := r.ipvs.calls, r.link.calls, r.sys.Writes()
			wantReport(t, r.reconcile(t))
			if n := r.ipvs.calls - ipvsCalls; n != 1+len(r.p.kernel.applied.servers) {
				t.Errorf("a Reconcile without drift made %d IPVS calls, want one read per owned virtual server and one list", n)
			}
			if r.link.calls-linkCalls > 2 || r.sys.Writes() != writes || r.rules.repairs > 1 {
				t.Errorf("a Reconcile without drift wrote: link calls %d, sysctl writes %d, rules repairs %d",
					r.link.calls-linkCalls, r.sys.Writes()-writes, r.rules.repairs)
			}
			if res := r.sync(t, reconcileState()); !res.Plan.Empty() {
				t.Errorf("the sync after Reconcile is not a no-op:\n%v", res.Plan)
			}
		})
	}
}

// lineDiff lists the lines of want and got that differ, each marked.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for _, l := range w {
		if !slices.Contains(g, l) {
			b.WriteString("-" + l + "\n")
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			b.WriteString("+" + l + "\n")
		}
	}
	return b.String()
}

// Before the first Sync, and after Cleanup, there is nothing to reconcile.
func TestReconcileBeforeSyncAndAfterCleanup(t *testing.T) {
	r := newRig(t, nil)
	wantReport(t, r.reconcile(t))
	if r.ipvs.calls+r.link.calls+r.rules.checks != 0 || len(r.link.Links()) != 0 {
		t.Fatalf("Reconcile before the first Sync touched the kernel: ipvs %d, link %d, rules %d", r.ipvs.calls, r.link.calls, r.rules.checks)
	}
	r.sync(t, oneService())
	must(t, r.p.Cleanup(context.Background()))
	wantReport(t, r.reconcile(t))
	if links := r.link.Links(); len(links) != 0 || strings.Contains(r.ipvs.Dump(), "198.18.100.1") {
		t.Fatalf("Reconcile after Cleanup re-created something: links %v, ipvs\n%s", links, r.ipvs.Dump())
	}
}

// After a failed Sync the proxier does not know what the kernel holds:
// Reconcile says so and changes nothing; the next Sync repairs.
func TestReconcileAfterAFailedSync(t *testing.T) {
	r := newRig(t, nil)
	r.sync(t, oneService())
	s := reconcileState()
	r.ipvs.failNext = true
	if _, err := r.p.Sync(context.Background(), &s); err == nil {
		t.Fatal("injected failure not reported")
	}
	before := r.snapshot()
	if _, err := r.p.Reconcile(context.Background()); !errors.Is(err, ErrSyncNeeded) {
		t.Fatalf("Reconcile after a failed Sync: %v, want ErrSyncNeeded", err)
	}
	if r.snapshot() != before {
		t.Fatal("Reconcile after a failed Sync changed something")
	}
	r.sync(t, s)
	wantReport(t, r.reconcile(t))
}

// A repair that fails is returned with what was found; the next Sync reads
// back and repairs the rest, rules included.
func TestReconcileFailureIsRepairedByTheNextSync(t *testing.T) {
	r := newRig(t, nil)
	r.sync(t, reconcileState())
	want := r.snapshot()
	ctx := context.Background()
	must(t, r.ipvs.Fake.DeleteService(ctx, webKey()))
	must(t, r.link.Fake.Unbind(ctx, DefaultLinkName, a("198.18.100.1")))
	r.ipvs.failNext = true
	rep, err := r.p.Reconcile(ctx)
	var oe *OpError
	if !errors.As(err, &oe) || oe.Subsystem != SubsystemIPVS || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("the injected failure was lost: %v", err)
	}
	wantReport(t, rep, "ipvs: virtual server tcp 198.18.100.1:80: missing", "addresses: address 198.18.100.1 on ipvskit0: missing")
	if _, err := r.p.Reconcile(ctx); !errors.Is(err, ErrSyncNeeded) {
		t.Fatalf("Reconcile after a failed Reconcile: %v", err)
	}
	applies := len(r.rules.applied)
	r.sync(t, reconcileState())
	if got := r.snapshot(); got != want {
		t.Fatalf("after the next Sync (-want +got):\n%s", lineDiff(want, got))
	}
	if len(r.rules.applied) != applies+1 {
		t.Errorf("the Sync after a failed Reconcile applied the rules %d times, want once", len(r.rules.applied)-applies)
	}
	r.rules.failRepair = true
	r.rules.drift = []iptables.ObjectDrift{{Object: "chain ip ipvskit services", Problem: "missing"}}

	if _, err := r.p.Reconcile(ctx); !errors.As(err, &oe) || oe.Subsystem != SubsystemRules || !strings.Contains(err.Error(), "repairing IPv4") {
		t.Fatalf("a failed rules repair: %v", err)
	}
}

// A canceled Reconcile changes nothing and says why.
func TestReconcileHonoursContext(t *testing.T) {
	r := newRig(t, nil)
	r.sync(t, oneService())
	must(t, r.ipvs.Fake.DeleteService(context.Background(), webKey()))
	before := r.snapshot()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.p.Reconcile(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if r.snapshot() != before {
		t.Fatal("a canceled Reconcile changed something")
	}
	wantReport(t, r.reconcile(t), "ipvs: virtual server tcp 198.18.100.1:80: missing")
}

// Reconciles and Syncs from many goroutines are serialised: under -race
// nothing races, and the kernel ends up with the last Sync's state.
func TestReconcileIsSerialisedWithSync(t *testing.T) {
	r := newRig(t, nil)
	r.sync(t, oneService())
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			s := oneService()
			if i%2 == 1 {
				s = reconcileState()
			}
			if _, err := r.p.Sync(context.Background(), &s); err != nil {
				errs <- err
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := r.p.Reconcile(context.Background()); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wantReport(t, r.reconcile(t))
}

// The IPv6 link-local address the kernel gives the VIP link while it is up
// is not a VIP: Reconcile neither reports nor removes it.
func TestReconcileLeavesTheLinkLocalAddress(t *testing.T) {
	r := newRig(t, nil)
	r.sync(t, oneService())
	must(t, r.link.Fake.AddAddr(DefaultLinkName, netip.MustParsePrefix("fe80::1/64")))
	before := r.snapshot()
	wantReport(t, r.reconcile(t))
	if r.snapshot() != before {
		t.Fatalf("Reconcile changed the link:\n%s", r.link.Dump())
	}
}

// A draining destination (weight 0) is part of what was applied: one whose
// weight someone raised is set back to 0; one someone deleted is not put
// back, and its drain ends (Drain no longer waits for it).
func TestReconcileAndDrainingDestinations(t *testing.T) {
	r, _ := drainRig(t, nil)
	r.sync(t, oneService())
	r.sync(t, without(oneService(), "web", a("198.18.1.1")))
	if r.p.pending.drains.len() != 1 {
		t.Fatalf("draining %d, want 1", r.p.pending.drains.len())
	}
	ctx := context.Background()
	d := webDest("198.18.1.1")
	d.Weight = 1
	must(t, r.ipvs.Fake.UpdateDestination(ctx, webKey(), d))
	wantReport(t, r.reconcile(t), "ipvs: destination tcp 198.18.100.1:80 -> 198.18.1.1:8080: weight 1, want 0")
	if !strings.Contains(r.ipvs.Dump(), "-r 198.18.1.1:8080 -m -w 0") || r.p.pending.drains.len() != 1 {
		t.Fatalf("the draining destination is not back at weight 0 (draining %d):\n%s", r.p.pending.drains.len(), r.ipvs.Dump())
	}

	must(t, r.ipvs.Fake.DeleteDestination(ctx, webKey(), ep1Key))
	before := r.ipvs.Dump()
	wantReport(t, r.reconcile(t))
	if got := r.ipvs.Dump(); got != before || r.p.pending.drains.len() != 0 {
		t.Fatalf("a deleted draining destination: draining %d, ipvs\n%s", r.p.pending.drains.len(), got)
	}
	if res := r.drain(t); len(res.Ended) != 0 || res.Draining != 0 {
		t.Fatalf("Drain after Reconcile ended %v", ends(res))
	}
	if res := r.sync(t, without(oneService(), "web", a("198.18.1.1"))); !res.Plan.Empty() {
		t.Fatalf("the sync after Reconcile is not a no-op:\n%v", res.Plan)
	}
}

// The Observer gets a *ReconcileEvent per call with the repairs by
// subsystem, and the Logger a line per drift.
func TestReconcileIsObserved(t *testing.T) {
	var events []*ReconcileEvent
	var logs bytes.Buffer
	r := newRig(t, &Config{
		Observer: ObserverFunc(func(e Event) {
			if re, ok := e.(*ReconcileEvent); ok {
				events = append(events, re)
			}
		}),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	r.sync(t, oneService())
	ctx := context.Background()
	must(t, r.ipvs.Fake.DeleteService(ctx, webKey()))
	must(t, r.link.Fake.Unbind(ctx, DefaultLinkName, a("198.18.100.1")))
	r.rules.drift = []iptables.ObjectDrift{{Object: "set KUBE-CLUSTER-IP", Problem: "missing"}, {Object: "chain nat KUBE-SERVICES", Problem: "missing"}}
	r.reconcile(t)
	r.reconcile(t)
	if len(events) != 2 {
		t.Fatalf("%d events, want 2", len(events))
	}
	want := map[Subsystem]int{SubsystemIPVS: 1, SubsystemAddresses: 1, SubsystemSets: 1, SubsystemRules: 1}
	if got := events[0].Repairs; !maps.Equal(got, want) || events[0].Err != nil || events[0].Duration <= 0 {
		t.Errorf("first event: repairs %v (want %v), err %v, duration %v", got, want, events[0].Err, events[0].Duration)
	}
	if len(events[1].Repairs) != 0 {
		t.Errorf("second event: repairs %v, want none", events[1].Repairs)
	}
	out := logs.String()
	for _, w := range []string{
		`level=WARN msg="proxier: drift" subsystem=ipvs object="virtual server tcp 198.18.100.1:80" problem=missing`,
		`level=WARN msg="proxier: drift" subsystem=sets object="set KUBE-CLUSTER-IP" problem=missing family=IPv4`,
		`level=INFO msg="proxier: reconciled" repairs=4`,
		`level=DEBUG msg="proxier: reconciled, no drift"`,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("log lacks %q:\n%s", w, out)
		}
	}
}

// A UDP virtual server someone deleted holds, once re-created, the flows
// its clients made meanwhile (no NAT, never answered): Reconcile deletes
// them, as a Sync does for a new frontend.
func TestReconcileDeletesStaleFlowsOfARecreatedFrontend(t *testing.T) {
	r := newCTRig(t)
	r.sync(t, udpState("198.18.1.1"))
	dns := ipvs.ServiceKey{Family: ipvs.IPv4, Protocol: ipvs.UDP, Addr: a("198.18.100.1"), Port: 53}
	must(t, r.p.ipvs.(*ipvstest.Fake).DeleteService(context.Background(), dns))
	meanwhile := udpFlow(2000, "198.18.100.1:53", "198.18.100.1:53") // answered by nothing
	answered := udpFlow(2001, "198.18.102.1:53", "198.18.1.1:5353")  // another frontend's
	must(t, r.ct.Add(meanwhile, answered))
	rep, err := r.p.Reconcile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantReport(t, rep, "ipvs: virtual server udp 198.18.100.1:53: missing")
	if rep.ConntrackDeleted != 1 || !slices.Equal(r.ct.Flows(), sortedFlows(answered)) {
		t.Fatalf("deleted %d, left %v; want the re-created frontend's flow gone", rep.ConntrackDeleted, r.ct.Flows())
	}
	dumps := r.ct.Dumps()
	if rep, err := r.p.Reconcile(context.Background()); err != nil || len(rep.Drift) != 0 || r.ct.Dumps() != dumps {
		t.Fatalf("a Reconcile without drift: %v %v, %d dumps", rep, err, r.ct.Dumps()-dumps)
	}
}

// What others add beside the proxier's objects is theirs, even on its VIP
// link and its VIPs: a virtual server at another port of one of its VIPs, a
// /32 and a /24 bound on its link, the kernel's link-local address. Reconcile
// reports none of it and leaves it; Cleanup and a restart leave it too
// (issue: such objects were "repaired" away, and fe80:: made every Sync fail).
func TestReconcileLeavesOthersObjectsOnTheProxiersVIPsAndLink(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	r.sync(t, reconcileState())
	theirs := ipvs.Service{Protocol: ipvs.TCP, Addr: a("198.18.100.1"), Port: 443, Scheduler: "wrr"}
	must(t, r.ipvs.Fake.AddService(ctx, theirs))
	must(t, r.ipvs.Fake.AddService(ctx, ipvs.Service{Protocol: ipvs.UDP, Addr: a("198.18.100.1"), Port: 53, Scheduler: "rr"}))
	for _, p := range []string{"198.18.100.50/32", "198.18.101.0/24", "fe80::1/64"} {
		must(t, r.link.Fake.AddAddr(DefaultLinkName, netip.MustParsePrefix(p)))
	}
	want := r.snapshot()
	wantReport(t, r.reconcile(t))
	if got := r.snapshot(); got != want {
		t.Fatalf("after Reconcile (-want +got):\n%s", lineDiff(want, got))
	}
	// A restart reads the kernel back: the same objects stay unread.
	p2, err := New(nil, Deps{IPVS: r.ipvs, Link: r.link, Sysctls: r.sys, Rules: map[Family]Rules{IPv4: r.rules}})
	must(t, err)
	s := reconcileState()
	res, err := p2.Sync(ctx, &s)
	must(t, err)
	if pl := res.Plan; pl.IPVSAdd.Len()+pl.IPVSDelete.Len()+len(pl.Bind)+len(pl.Unbind) != 0 {
		t.Errorf("restart: the plan changes IPVS or the link:\n%s", pl)
	}
	must(t, p2.Cleanup(ctx))
	got := r.ipvs.Dump()
	for _, w := range []string{"-A -t 198.18.100.1:443 -s wrr\n", "-A -u 198.18.100.1:53 -s rr\n"} {
		if !strings.Contains(got, w) {
			t.Errorf("Cleanup took %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "198.18.100.1:80") {
		t.Errorf("Cleanup left the proxier's own virtual server:\n%s", got)
	}
}
