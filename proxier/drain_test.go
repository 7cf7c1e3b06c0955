package proxier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// fakeClock is the Proxier's clock in tests: it moves only when told.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func drainRig(t *testing.T, c *Config) (*rig, *fakeClock) {
	t.Helper()
	r := newRig(t, c)
	clk := &fakeClock{t: t0}
	r.p.now = clk.now
	return r, clk
}

var (
	web80  = key(ipvs.TCP, "198.18.100.1", 80)
	ep1Key = ipvs.DestinationKey{Addr: a("198.18.1.1"), Port: 8080}
	ep2Key = ipvs.DestinationKey{Addr: a("198.18.1.2"), Port: 8080}
)

// without returns a copy of s in which service id has no endpoint at addr.
func without(s State, id string, addr netip.Addr) State {
	out := State{Node: s.Node, Services: map[string]Service{}}
	for k, v := range s.Services {
		if k == id {
			v.Endpoints = slices.DeleteFunc(slices.Clone(v.Endpoints), func(e Endpoint) bool { return e.Addr == addr })
		}
		out.Services[k] = v
	}
	return out
}

func (r *rig) drain(t *testing.T) *DrainResult {
	t.Helper()
	res, err := r.p.Drain(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// ends renders a DrainResult's Ended as "destination reason" lines.
func ends(res *DrainResult) string {
	var out []string
	for _, e := range res.Ended {
		out = append(out, e.Service.String()+" -> "+e.Destination.String()+" "+e.Reason.String())
	}
	return strings.Join(out, "\n")
}

func wantKinds(t *testing.T, what string, b *ipvs.Batch, want ...string) {
	t.Helper()
	if got := kinds(b); !slices.Equal(got, want) {
		t.Errorf("%s:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// An endpoint that leaves a TCP service stays at weight 0 (one update, no
// delete), the plan says so, and a sync with nothing changed still sends
// nothing.
func TestDrainStartsAtWeightZero(t *testing.T) {
	r, _ := drainRig(t, nil)
	r.sync(t, oneService())
	res := r.sync(t, without(oneService(), "web", a("198.18.1.2")))
	wantKinds(t, "adds", &res.Plan.IPVSAdd, "update destination tcp 198.18.100.1:80 -> 198.18.1.2:8080")
	wantKinds(t, "deletes", &res.Plan.IPVSDelete)
	if !strings.Contains(res.Plan.String(), "-e -t 198.18.100.1:80 -r 198.18.1.2:8080 -m -w 0\n") {
		t.Errorf("the plan does not show the weight-0 update:\n%s", res.Plan)
	}
	if !strings.Contains(r.ipvs.Dump(), "-a -t 198.18.100.1:80 -r 198.18.1.2:8080 -m -w 0\n") || res.Draining != 1 {
		t.Errorf("draining %d; ipvs:\n%s", res.Draining, r.ipvs.Dump())
	}

	calls, requests := r.ipvs.calls, r.ipvs.requests
	res = r.sync(t, without(oneService(), "web", a("198.18.1.2")))
	if !res.Plan.Empty() || r.ipvs.calls != calls || res.Draining != 1 {
		t.Errorf("a sync with no change: plan empty %v, ipvs calls %d->%d, draining %d:\n%s", res.Plan.Empty(), calls, r.ipvs.calls, res.Draining, res.Plan)
	}

	// Busy: Drain reads the one virtual server and deletes nothing.
	r.ipvs.SetConns(web80, ep2Key, 1, 0, 0)
	d := r.drain(t)
	if len(d.Ended) != 0 || d.Draining != 1 || r.ipvs.calls != calls+1 || r.ipvs.requests != requests {
		t.Errorf("Drain of a busy destination: %+v; ipvs calls %d->%d, requests %d->%d", d, calls, r.ipvs.calls, requests, r.ipvs.requests)
	}
}

// Drain deletes a draining destination once it has no active and no
// inactive connections (persistence templates do not count, as in
// kube-proxy), in one request, and afterwards a sync plans nothing and
// Drain sends nothing.
func TestDrainEndsWhenIdle(t *testing.T) {
	r, clk := drainRig(t, nil)
	r.sync(t, oneService())
	r.sync(t, without(oneService(), "web", a("198.18.1.2")))
	r.ipvs.SetConns(web80, ep2Key, 0, 2, 0) // TIME_WAIT and the like
	if d := r.drain(t); len(d.Ended) != 0 || d.Draining != 1 {
		t.Fatalf("Drain with inactive connections left: %+v", d)
	}
	clk.add(time.Minute)
	r.sync(t, without(oneService(), "web", a("198.18.1.2"))) // the drain's start stays
	r.ipvs.SetConns(web80, ep2Key, 0, 0, 3)
	requests := r.ipvs.requests
	d := r.drain(t)
	if got := ends(d); got != "tcp 198.18.100.1:80 -> 198.18.1.2:8080 idle" || d.Draining != 0 || !d.Ended[0].Since.Equal(t0) || r.ipvs.requests != requests+1 {
		t.Fatalf("Drain of an idle destination: %q %+v; requests %d->%d", got, d, requests, r.ipvs.requests)
	}
	if strings.Contains(r.ipvs.Dump(), "198.18.1.2") {
		t.Errorf("the idle destination is still there:\n%s", r.ipvs.Dump())
	}
	calls := r.ipvs.calls
	if res := r.sync(t, without(oneService(), "web", a("198.18.1.2"))); !res.Plan.Empty() || res.Draining != 0 {
		t.Errorf("sync after the drain ended: draining %d, plan:\n%s", res.Draining, res.Plan)
	}
	if d := r.drain(t); len(d.Ended) != 0 || d.Draining != 0 || r.ipvs.calls != calls {
		t.Errorf("Drain with nothing draining: %+v, ipvs calls %d->%d", d, calls, r.ipvs.calls)
	}
	// It comes back: added again.
	res := r.sync(t, oneService())
	wantKinds(t, "adds", &res.Plan.IPVSAdd, "add destination tcp 198.18.100.1:80 -> 198.18.1.2:8080")
}

// A destination with connections open is deleted once it has drained for
// MaxDrain (DefaultMaxDrain when 0), with its connection counts reported.
func TestDrainEndsAfterMaxDrain(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		wait time.Duration
	}{{Config{}, DefaultMaxDrain}, {Config{MaxDrain: 90 * time.Second}, 90 * time.Second}} {
		r, clk := drainRig(t, &c.cfg)
		r.sync(t, oneService())
		r.sync(t, without(oneService(), "web", a("198.18.1.2")))
		r.ipvs.SetConns(web80, ep2Key, 1, 4, 0)
		clk.add(c.wait - time.Nanosecond)
		if d := r.drain(t); len(d.Ended) != 0 || d.Draining != 1 {
			t.Fatalf("MaxDrain %v: Drain before it passed: %+v", c.cfg.MaxDrain, d)
		}
		clk.add(time.Nanosecond)
		d := r.drain(t)
		if got := ends(d); got != "tcp 198.18.100.1:80 -> 198.18.1.2:8080 expired" || d.Draining != 0 ||
			d.Ended[0].ActiveConns != 1 || d.Ended[0].InactiveConns != 4 || !d.Ended[0].Since.Equal(t0) {
			t.Fatalf("MaxDrain %v: %q %+v", c.cfg.MaxDrain, got, d)
		}
		if strings.Contains(r.ipvs.Dump(), "198.18.1.2") {
			t.Errorf("MaxDrain %v: the expired destination is still there:\n%s", c.cfg.MaxDrain, r.ipvs.Dump())
		}
	}
}

// A draining destination that comes back returns to its weight with one
// update (never a delete and an add), leaves the drain list, and a second
// drain starts its clock afresh.
func TestDrainingDestinationReturnsInPlace(t *testing.T) {
	r, clk := drainRig(t, &Config{MaxDrain: time.Minute})
	r.sync(t, oneService())
	r.sync(t, without(oneService(), "web", a("198.18.1.2")))
	r.ipvs.SetConns(web80, ep2Key, 1, 0, 0)
	clk.add(50 * time.Second)
	res := r.sync(t, oneService())
	wantKinds(t, "adds", &res.Plan.IPVSAdd, "update destination tcp 198.18.100.1:80 -> 198.18.1.2:8080")
	wantKinds(t, "deletes", &res.Plan.IPVSDelete)
	if !strings.Contains(r.ipvs.Dump(), "-r 198.18.1.2:8080 -m -w 1\n") || res.Draining != 0 {
		t.Fatalf("draining %d; ipvs:\n%s", res.Draining, r.ipvs.Dump())
	}
	calls := r.ipvs.calls
	if d := r.drain(t); d.Draining != 0 || r.ipvs.calls != calls {
		t.Errorf("Drain after the return: %+v, ipvs calls %d->%d", d, calls, r.ipvs.calls)
	}
	// Leaves again 50 s later: 100 s after the first drain began, but only
	// 50 s into this one, so it stays.
	r.sync(t, without(oneService(), "web", a("198.18.1.2")))
	clk.add(50 * time.Second)
	if d := r.drain(t); len(d.Ended) != 0 || d.Draining != 1 {
		t.Fatalf("second drain ended early: %+v", d)
	}
	clk.add(10 * time.Second)
	if d := r.drain(t); ends(d) != "tcp 198.18.100.1:80 -> 198.18.1.2:8080 expired" || !d.Ended[0].Since.Equal(t0.Add(50*time.Second)) {
		t.Fatalf("second drain: %+v", d)
	}
}

// UDP and SCTP destinations are deleted at once (kubernetes#71514); only
// the TCP one drains.
func TestUDPAndSCTPDestinationsGoAtOnce(t *testing.T) {
	r, _ := drainRig(t, nil)
	s := oneService()
	web := s.Services["web"]
	web.Ports = []Port{
		{Name: "http", Protocol: TCP, Port: 80, TargetPort: 8080},
		{Name: "dns", Protocol: UDP, Port: 53},
		{Name: "sig", Protocol: SCTP, Port: 3868},
	}
	s.Services["web"] = web
	r.sync(t, s)
	res := r.sync(t, without(s, "web", a("198.18.1.2")))
	wantKinds(t, "adds", &res.Plan.IPVSAdd, "update destination tcp 198.18.100.1:80 -> 198.18.1.2:8080")
	wantKinds(t, "deletes", &res.Plan.IPVSDelete,
		"delete destination udp 198.18.100.1:53 -> 198.18.1.2:53",
		"delete destination sctp 198.18.100.1:3868 -> 198.18.1.2:3868")
	if res.Draining != 1 {
		t.Errorf("draining %d, want 1 (the TCP destination)", res.Draining)
	}
}

// A virtual server that goes takes its draining destinations with it: one
// delete, and nothing left to drain.
func TestServiceRemovedWhileDraining(t *testing.T) {
	r, _ := drainRig(t, nil)
	r.sync(t, oneService())
	r.sync(t, without(oneService(), "web", a("198.18.1.2")))
	res := r.sync(t, State{})
	wantKinds(t, "deletes", &res.Plan.IPVSDelete, "delete service tcp 198.18.100.1:80")
	calls := r.ipvs.calls
	if d := r.drain(t); res.Draining != 0 || d.Draining != 0 || r.ipvs.calls != calls {
		t.Errorf("after the service went: sync draining %d, Drain %+v, ipvs calls %d->%d", res.Draining, d, calls, r.ipvs.calls)
	}
}

// A new Proxier over a node an earlier one left (kubernetes#92019) rebuilds
// its drain list from the first sync's read back: a weight-0 destination
// the State does not have drains (counted from that sync) and is deleted by
// Drain when idle; one the State has returns to weight 1; one at weight 1
// that the State dropped meanwhile starts draining.
func TestRestartRebuildsTheDrainList(t *testing.T) {
	first, _ := drainRig(t, nil)
	s := oneService()
	web := s.Services["web"]
	web.Endpoints = append(web.Endpoints, Endpoint{Addr: a("198.18.1.3"), Ready: true}, Endpoint{Addr: a("198.18.1.4"), Ready: true})
	s.Services["web"] = web
	first.sync(t, s)
	first.sync(t, without(without(s, "web", a("198.18.1.2")), "web", a("198.18.1.3"))) // 1.2 and 1.3 drain

	// The restart: 1.3 is back in the State, 1.4 has left it.
	p, err := New(nil, Deps{IPVS: first.ipvs, Link: first.link, Sysctls: first.sys, Rules: map[Family]Rules{IPv4: first.rules}})
	if err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{t: t0.Add(time.Hour)}
	p.now = clk.now
	res, err := p.Sync(context.Background(), ptr(without(without(s, "web", a("198.18.1.2")), "web", a("198.18.1.4"))))
	if err != nil {
		t.Fatal(err)
	}
	wantKinds(t, "adds", &res.Plan.IPVSAdd,
		"update destination tcp 198.18.100.1:80 -> 198.18.1.3:8080",
		"update destination tcp 198.18.100.1:80 -> 198.18.1.4:8080")
	wantKinds(t, "deletes", &res.Plan.IPVSDelete)
	want := "-A -t 198.18.100.1:80 -s rr\n" +
		"-a -t 198.18.100.1:80 -r 198.18.1.1:8080 -m -w 1\n" +
		"-a -t 198.18.100.1:80 -r 198.18.1.2:8080 -m -w 0\n" +
		"-a -t 198.18.100.1:80 -r 198.18.1.3:8080 -m -w 1\n" +
		"-a -t 198.18.100.1:80 -r 198.18.1.4:8080 -m -w 0\n"
	if got := first.ipvs.Dump(); got != want || res.Draining != 2 {
		t.Fatalf("after the restart's first sync, draining %d; ipvs:\n%s\nwant:\n%s", res.Draining, got, want)
	}
	first.ipvs.SetConns(web80, ipvs.DestinationKey{Addr: a("198.18.1.4"), Port: 8080}, 1, 0, 0)
	d, err := p.Drain(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := ends(d); got != "tcp 198.18.100.1:80 -> 198.18.1.2:8080 idle" || !d.Ended[0].Since.Equal(clk.t) || d.Draining != 1 {
		t.Errorf("Drain after the restart: %q %+v", got, d)
	}
}

// A destination someone else deleted while it drained leaves the list
// without a request; the proxier's memory follows, so the next sync plans
// nothing and one that brings it back adds it.
func TestDrainingDestinationDeletedBySomeoneElse(t *testing.T) {
	r, _ := drainRig(t, nil)
	r.sync(t, oneService())
	r.sync(t, without(oneService(), "web", a("198.18.1.2")))
	if err := r.ipvs.Fake.DeleteDestination(context.Background(), web80, ep2Key); err != nil {
		t.Fatal(err)
	}
	r.ipvs.SetConns(web80, ep1Key, 5, 5, 0)
	requests := r.ipvs.requests
	if d := r.drain(t); ends(d) != "tcp 198.18.100.1:80 -> 198.18.1.2:8080 vanished" || d.Draining != 0 || r.ipvs.requests != requests {
		t.Fatalf("Drain: %+v, requests %d->%d", d, requests, r.ipvs.requests)
	}
	if res := r.sync(t, without(oneService(), "web", a("198.18.1.2"))); !res.Plan.Empty() {
		t.Errorf("sync after the vanished drain:\n%s", res.Plan)
	}
	res := r.sync(t, oneService())
	wantKinds(t, "adds", &res.Plan.IPVSAdd, "add destination tcp 198.18.100.1:80 -> 198.18.1.2:8080")
}

// A Drain whose delete fails says so, keeps the destination on the list,
// and the next Sync reads the kernel back and the next Drain finishes.
func TestFailedDrainIsRepaired(t *testing.T) {
	r, _ := drainRig(t, nil)
	r.sync(t, oneService())
	r.sync(t, without(oneService(), "web", a("198.18.1.2")))
	r.ipvs.failNext = true
	d, err := r.p.Drain(context.Background())
	if err == nil || d.Draining != 1 || len(d.Ended) != 0 {
		t.Fatalf("failed Drain: %+v, err %v", d, err)
	}
	calls := r.ipvs.calls
	if res := r.sync(t, without(oneService(), "web", a("198.18.1.2"))); !res.Plan.Empty() || r.ipvs.calls == calls || res.Draining != 1 {
		t.Errorf("sync after a failed Drain: read back %v, draining %d, plan:\n%s", r.ipvs.calls != calls, res.Draining, res.Plan)
	}
	if d := r.drain(t); ends(d) != "tcp 198.18.100.1:80 -> 198.18.1.2:8080 idle" {
		t.Errorf("Drain after the repair: %+v", d)
	}
}

// A Drain whose context is done sends nothing and changes nothing.
func TestCanceledDrainChangesNothing(t *testing.T) {
	r, _ := drainRig(t, nil)
	r.sync(t, oneService())
	r.sync(t, without(oneService(), "web", a("198.18.1.2")))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := r.ipvs.calls
	d, err := r.p.Drain(ctx)
	if !errors.Is(err, context.Canceled) || d.Draining != 1 || r.ipvs.calls != calls {
		t.Fatalf("canceled Drain: %+v, err %v, ipvs calls %d->%d", d, err, calls, r.ipvs.calls)
	}
	if d := r.drain(t); ends(d) != "tcp 198.18.100.1:80 -> 198.18.1.2:8080 idle" {
		t.Errorf("Drain after the canceled one: %+v", d)
	}
}

func TestNegativeMaxDrainIsRefused(t *testing.T) {
	_, err := New(&Config{MaxDrain: -time.Second}, Deps{IPVS: ipvstest.New(), Link: dummytest.New(), Sysctls: sysctltest.New(""), Rules: map[Family]Rules{IPv4: &fakeRules{}}})
	var ve *ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "config.maxDrain: -1s is negative") {
		t.Fatalf("err = %v", err)
	}
}

// Terminating endpoints that still serve are kube-proxy's fallback: used
// only when no endpoint (of the policy's choice: all, or this node's) is
// Ready. An endpoint that is not Serving, or Serving but not Terminating
// (and not Ready), is never used.
func TestServingTerminatingEndpointsAreOnlyAFallback(t *testing.T) {
	ep := func(addr string, ready, serving, terminating, local bool) Endpoint {
		return Endpoint{Addr: a(addr), Ready: ready, Serving: serving, Terminating: terminating, Local: local}
	}
	for _, c := range []struct {
		name   string
		policy TrafficPolicy
		eps    []Endpoint
		want   []string
	}{
		{"ReadyWins", Cluster, []Endpoint{ep("198.18.1.1", true, true, false, false), ep("198.18.1.2", false, true, true, false)}, []string{"198.18.1.1"}},
		{"Fallback", Cluster, []Endpoint{ep("198.18.1.1", false, true, true, false), ep("198.18.1.2", false, true, true, true)}, []string{"198.18.1.1", "198.18.1.2"}},
		{"NotServing", Cluster, []Endpoint{ep("198.18.1.1", false, false, true, false)}, nil},
		{"ServingNotTerminating", Cluster, []Endpoint{ep("198.18.1.1", false, true, false, false)}, nil},
		{"LocalFallbackBeforeRemoteReady", Local, []Endpoint{ep("198.18.1.1", true, true, false, false), ep("198.18.1.2", false, true, true, true)}, []string{"198.18.1.2"}},
		{"LocalReadyWins", Local, []Endpoint{ep("198.18.1.1", true, true, false, true), ep("198.18.1.2", false, true, true, true)}, []string{"198.18.1.1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			svc := Service{Endpoints: c.eps}
			var got []string
			for _, d := range chooseEndpoints(&svc, Port{Port: 80}, c.policy, IPv4, nil) {
				got = append(got, d.Addr.String())
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("chose %v, want %v", got, c.want)
			}
		})
	}
}

// Through Sync: an endpoint that starts terminating while others are Ready
// drains at once (weight 0, kube-proxy waits for its removal); when it is
// the last one serving it is the fallback and returns to weight 1 in place.
func TestTerminatingEndpointDrainsThenServesAsFallback(t *testing.T) {
	r, _ := drainRig(t, nil)
	r.sync(t, oneService())
	s := oneService()
	web := s.Services["web"]
	web.Endpoints[1] = Endpoint{Addr: a("198.18.1.2"), Serving: true, Terminating: true}
	s.Services["web"] = web
	res := r.sync(t, s)
	wantKinds(t, "terminating: adds", &res.Plan.IPVSAdd, "update destination tcp 198.18.100.1:80 -> 198.18.1.2:8080")
	if res.Draining != 1 {
		t.Errorf("draining %d, want 1", res.Draining)
	}
	res = r.sync(t, without(s, "web", a("198.18.1.1")))
	wantKinds(t, "fallback: adds", &res.Plan.IPVSAdd,
		"update destination tcp 198.18.100.1:80 -> 198.18.1.1:8080",
		"update destination tcp 198.18.100.1:80 -> 198.18.1.2:8080")
	want := "-A -t 198.18.100.1:80 -s rr\n" +
		"-a -t 198.18.100.1:80 -r 198.18.1.1:8080 -m -w 0\n" +
		"-a -t 198.18.100.1:80 -r 198.18.1.2:8080 -m -w 1\n"
	if got := r.ipvs.Dump(); got != want || res.Draining != 1 {
		t.Errorf("draining %d; ipvs:\n%s\nwant:\n%s", res.Draining, got, want)
	}
}

// The Observer gets a *DrainEvent per Drain (deleted count and queue
// length, the error on failure), and the Logger a line per ended drain;
// a failure is an *OpError of ipvs.
func TestObserverSeesEveryDrain(t *testing.T) {
	var events []*DrainEvent
	var logs bytes.Buffer
	r, _ := drainRig(t, &Config{
		Observer: ObserverFunc(func(e Event) {
			if de, ok := e.(*DrainEvent); ok {
				events = append(events, de)
			}
		}),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	r.drain(t) // nothing draining
	r.sync(t, oneService())
	r.sync(t, without(without(oneService(), "web", a("198.18.1.2")), "web", a("198.18.1.1")))
	r.ipvs.SetConns(web80, ep1Key, 1, 0, 0)
	r.ipvs.failNext = true
	_, err := r.p.Drain(context.Background())
	var oe *OpError
	if !errors.As(err, &oe) || oe.Subsystem != SubsystemIPVS {
		t.Fatalf("failed Drain: err = %v, want an *OpError of ipvs", err)
	}
	r.drain(t) // 1.2 idle, 1.1 busy
	var got []string
	for _, e := range events {
		got = append(got, fmt.Sprintf("deleted %d queue %d failed %v", e.Deleted, e.Queue, e.Err != nil))
	}
	if want := []string{"deleted 0 queue 0 failed false", "deleted 0 queue 2 failed true", "deleted 1 queue 1 failed false"}; !slices.Equal(got, want) {
		t.Errorf("drain events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, want := range []string{`level=DEBUG msg="proxier: drained nothing"`, `level=WARN msg="proxier: drain failed"`,
		`level=INFO msg="proxier: drain ended" service="tcp 198.18.100.1:80" destination=198.18.1.2:8080 reason=idle`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}
