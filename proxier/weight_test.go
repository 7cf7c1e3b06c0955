package proxier

import (
	"context"
	"net/netip"
	"strings"
	"testing"
)

// weightedState is a wrr service over four endpoints: the default weight
// (1), 2, 3 with thresholds, and one quiesced.
func weightedState() State {
	return State{Services: map[string]Service{"web": {
		ClusterIPs: []netip.Addr{a("198.18.100.1")},
		Ports:      []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: 8080}},
		Scheduler:  "wrr",
		Endpoints: []Endpoint{
			{Addr: a("198.18.1.1"), Ready: true},
			{Addr: a("198.18.1.2"), Ready: true, Weight: 2},
			{Addr: a("198.18.1.3"), Ready: true, Weight: 3, UpperThreshold: 100, LowerThreshold: 50},
			{Addr: a("198.18.1.4"), Ready: true, Quiesced: true},
		},
	}}}
}

const weightedDump = "-A -t 198.18.100.1:80 -s wrr\n" +
	"-a -t 198.18.100.1:80 -r 198.18.1.1:8080 -m -w 1\n" +
	"-a -t 198.18.100.1:80 -r 198.18.1.2:8080 -m -w 2\n" +
	"-a -t 198.18.100.1:80 -r 198.18.1.3:8080 -m -w 3 -x 100 -y 50\n" +
	"-a -t 198.18.100.1:80 -r 198.18.1.4:8080 -m -w 0\n"

// withEndpoint returns a copy of s whose service id has endpoint i changed
// by edit.
func withEndpoint(s State, id string, i int, edit func(*Endpoint)) State {
	out := State{Node: s.Node, Services: cloneServices(s.Services)}
	svc := out.Services[id]
	edit(&svc.Endpoints[i])
	out.Services[id] = svc
	return out
}

// wantOnly fails t unless res's plan is exactly the IPVS requests want (as
// kinds renders them) and nothing else, and the fake got exactly that
// many requests since sent.
func wantOnly(t *testing.T, r *rig, sent int, res *Result, want ...string) {
	t.Helper()
	wantKinds(t, "the plan's IPVS additions and updates", &res.Plan.IPVSAdd, want...)
	p := res.Plan
	if p.IPVSDelete.Len() != 0 || len(p.Bind) != 0 || len(p.Unbind) != 0 || len(p.Rules) != 0 || len(p.RulesAfter) != 0 || len(p.SetChanges) != 0 {
		t.Errorf("the plan does more than the IPVS requests:\n%s", p)
	}
	if got := r.ipvs.requests - sent; got != len(want) {
		t.Errorf("%d IPVS requests sent, want %d", got, len(want))
	}
}

// Weights, a quiesced endpoint and thresholds reach the destinations; a
// State without them keeps weight 1 (TestFirstSyncBuildsEverything...).
func TestWeightsAreWritten(t *testing.T) {
	r := newRig(t, nil)
	res := r.sync(t, weightedState())
	if got := r.ipvs.Dump(); got != weightedDump {
		t.Errorf("ipvs:\n%s\nwant:\n%s", got, weightedDump)
	}
	if res.Draining != 0 {
		t.Errorf("the quiesced endpoint drains: draining %d", res.Draining)
	}
	for _, w := range []string{"-r 198.18.1.3:8080 -m -w 3 -x 100 -y 50", "-r 198.18.1.4:8080 -m -w 0"} {
		if !strings.Contains(res.Plan.String(), w) {
			t.Errorf("the plan lacks %q:\n%s", w, res.Plan)
		}
	}
}

// A weight, quiesce or threshold change is one UpdateDestination and
// nothing else, through Sync and through Update alike.
func TestWeightChangeIsOneUpdate(t *testing.T) {
	upd := "update destination tcp 198.18.100.1:80 -> "
	for _, c := range []struct {
		name string
		i    int
		edit func(*Endpoint)
	}{
		{"weight", 1, func(e *Endpoint) { e.Weight = 5 }},
		{"default to explicit", 0, func(e *Endpoint) { e.Weight = 4 }},
		{"quiesce", 2, func(e *Endpoint) { e.Weight, e.Quiesced = 0, true }},
		{"unquiesce", 3, func(e *Endpoint) { e.Quiesced = false }},
		{"thresholds", 2, func(e *Endpoint) { e.UpperThreshold, e.LowerThreshold = 0, 0 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			next := withEndpoint(weightedState(), "web", c.i, c.edit)
			dest := weightedState().Services["web"].Endpoints[c.i].Addr.String() + ":8080"

			r := newRig(t, nil)
			r.sync(t, weightedState())
			sent := r.ipvs.requests
			wantOnly(t, r, sent, r.sync(t, next), upd+dest)

			r = newRig(t, nil)
			r.sync(t, weightedState())
			sent = r.ipvs.requests
			svc := next.Services["web"]
			res, err := r.p.Update(context.Background(), map[string]*Service{"web": &svc})
			must(t, err)
			wantOnly(t, r, sent, res, upd+dest)
		})
	}
	// Weight 1 said explicitly is the default: nothing to send.
	r := newRig(t, nil)
	r.sync(t, weightedState())
	sent := r.ipvs.requests
	wantOnly(t, r, sent, r.sync(t, withEndpoint(weightedState(), "web", 0, func(e *Endpoint) { e.Weight = 1 })))
}

// A restarted Proxier whose State has the weights the kernel holds sends
// no IPVS request, as counted by the fake and by the SyncEvent.
func TestRestartWithTheSameWeightsSendsNothing(t *testing.T) {
	r := newRig(t, nil)
	r.sync(t, weightedState())
	sent := r.ipvs.requests
	var ops []int
	p, err := New(&Config{Observer: ObserverFunc(func(e Event) {
		if se, ok := e.(*SyncEvent); ok {
			ops = append(ops, se.Ops[SubsystemIPVS])
		}
	})}, Deps{IPVS: r.ipvs, Link: r.link, Sysctls: r.sys, Rules: map[Family]Rules{IPv4: r.rules}})
	must(t, err)
	res, err := p.Sync(context.Background(), ptr(weightedState()))
	must(t, err)
	if n := res.Plan.IPVSAdd.Len() + res.Plan.IPVSDelete.Len(); n != 0 || r.ipvs.requests != sent || len(ops) != 1 || ops[0] != 0 {
		t.Errorf("the restart's first sync: plan %d IPVS requests, fake got %d, SyncEvent ops %v; want none:\n%s",
			n, r.ipvs.requests-sent, ops, res.Plan)
	}
	if res.Draining != 0 {
		t.Errorf("the restart drains the quiesced endpoint: draining %d", res.Draining)
	}
	if got := r.ipvs.Dump(); got != weightedDump {
		t.Errorf("ipvs:\n%s\nwant:\n%s", got, weightedDump)
	}
}

// Reconcile repairs a weight only where it differs from the State's: a
// weight someone changed goes back to the State's, with one update, and
// weights that are the State's (2, 3, 0) are not drift.
func TestReconcileRepairsAWeightToTheStates(t *testing.T) {
	r := newRig(t, nil)
	r.sync(t, weightedState())
	wantReport(t, r.reconcile(t)) // the State's own weights are no drift
	d := webDest("198.18.1.2")
	d.Weight = 7
	must(t, r.ipvs.Fake.UpdateDestination(context.Background(), webKey(), d))
	q := webDest("198.18.1.4")
	q.Weight = 1
	must(t, r.ipvs.Fake.UpdateDestination(context.Background(), webKey(), q))
	sent := r.ipvs.requests
	wantReport(t, r.reconcile(t),
		"ipvs: destination tcp 198.18.100.1:80 -> 198.18.1.2:8080: weight 7, want 2",
		"ipvs: destination tcp 198.18.100.1:80 -> 198.18.1.4:8080: weight 1, want 0")
	if got := r.ipvs.Dump(); got != weightedDump || r.ipvs.requests-sent != 2 {
		t.Errorf("after the repair (%d requests), ipvs:\n%s\nwant:\n%s", r.ipvs.requests-sent, got, weightedDump)
	}
	wantReport(t, r.reconcile(t))
}

// A weighted endpoint that leaves drains at weight 0 and returns to its
// own weight in place; a quiesced one is not drained: Drain leaves it,
// idle, where a leaving one is deleted.
func TestWeightedEndpointsDrainAndReturn(t *testing.T) {
	r, _ := drainRig(t, nil)
	r.sync(t, weightedState())
	gone := without(weightedState(), "web", a("198.18.1.3"))
	res := r.sync(t, gone)
	wantKinds(t, "leaving", &res.Plan.IPVSAdd, "update destination tcp 198.18.100.1:80 -> 198.18.1.3:8080")
	if !strings.Contains(r.ipvs.Dump(), "-r 198.18.1.3:8080 -m -w 0 -x 100 -y 50\n") || res.Draining != 1 {
		t.Errorf("the leaving endpoint is not draining at weight 0 (draining %d):\n%s", res.Draining, r.ipvs.Dump())
	}
	res = r.sync(t, weightedState())
	wantKinds(t, "returning", &res.Plan.IPVSAdd, "update destination tcp 198.18.100.1:80 -> 198.18.1.3:8080")
	if got := r.ipvs.Dump(); got != weightedDump || res.Draining != 0 {
		t.Errorf("back (draining %d):\n%s\nwant:\n%s", res.Draining, got, weightedDump)
	}
	r.sync(t, gone)
	d := r.drain(t) // every destination idle
	if got := ends(d); got != "tcp 198.18.100.1:80 -> 198.18.1.3:8080 idle" || d.Draining != 0 {
		t.Errorf("Drain ended %q, draining %d; want only the leaving endpoint", got, d.Draining)
	}
	if !strings.Contains(r.ipvs.Dump(), "-r 198.18.1.4:8080 -m -w 0\n") {
		t.Errorf("Drain deleted the quiesced endpoint:\n%s", r.ipvs.Dump())
	}
}

// A serving and terminating endpoint chosen as the fallback keeps its
// weight; one not chosen drains at weight 0 whatever its weight.
func TestFallbackKeepsItsWeight(t *testing.T) {
	r := newRig(t, nil)
	s := State{Services: map[string]Service{"web": {
		ClusterIPs: []netip.Addr{a("198.18.100.1")},
		Ports:      []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: 8080}},
		Endpoints: []Endpoint{
			{Addr: a("198.18.1.1"), Ready: true, Weight: 4},
			{Addr: a("198.18.1.2"), Serving: true, Terminating: true, Weight: 3},
		},
	}}}
	r.sync(t, s)
	want := "-A -t 198.18.100.1:80 -s rr\n-a -t 198.18.100.1:80 -r 198.18.1.1:8080 -m -w 4\n"
	if got := r.ipvs.Dump(); got != want {
		t.Errorf("ipvs:\n%s\nwant:\n%s", got, want)
	}
	r.sync(t, withEndpoint(s, "web", 0, func(e *Endpoint) { e.Ready, e.Serving, e.Terminating = false, true, true }))
	want = "-A -t 198.18.100.1:80 -s rr\n" +
		"-a -t 198.18.100.1:80 -r 198.18.1.1:8080 -m -w 4\n" +
		"-a -t 198.18.100.1:80 -r 198.18.1.2:8080 -m -w 3\n"
	if got := r.ipvs.Dump(); got != want {
		t.Errorf("both as the fallback; ipvs:\n%s\nwant:\n%s", got, want)
	}
	r.sync(t, withEndpoint(s, "web", 1, func(e *Endpoint) { e.Terminating = false; e.Ready = true }))
	res := r.sync(t, s)
	if !strings.Contains(r.ipvs.Dump(), "-r 198.18.1.2:8080 -m -w 0\n") || res.Draining != 1 {
		t.Errorf("the terminating endpoint is not draining at weight 0:\n%s", r.ipvs.Dump())
	}
}
