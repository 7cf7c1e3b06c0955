package proxier

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/conntrack/conntracktest"
	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// udpState is one service with a cluster IP, an external IP and a node
// port (on the node address 198.18.20.1), UDP 53 -> 5353 and TCP 80 ->
// 8080, with the given endpoints.
func udpState(eps ...string) State {
	s := State{
		Node: Node{Addresses: []netip.Addr{a("198.18.20.1")}},
		Services: map[string]Service{"dns": {
			ClusterIPs:  []netip.Addr{a("198.18.100.1")},
			ExternalIPs: []netip.Addr{a("198.18.102.1")},
			Ports: []Port{
				{Name: "dns", Protocol: UDP, Port: 53, TargetPort: 5353, NodePort: 30053},
				{Name: "http", Protocol: TCP, Port: 80, TargetPort: 8080},
			},
		}},
	}
	svc := s.Services["dns"]
	for _, e := range eps {
		svc.Endpoints = append(svc.Endpoints, Endpoint{Addr: a(e), Ready: true})
	}
	s.Services["dns"] = svc
	return s
}

func desiredOf(t *testing.T, s State) *desired {
	t.Helper()
	c := &Config{}
	if err := s.Validate(c); err != nil {
		t.Fatal(err)
	}
	return compute(&s, c)
}

func udpKey(addr string, port uint16) ipvs.ServiceKey {
	return ipvs.ServiceKey{Family: ipvs.IPv4, Protocol: ipvs.UDP, Addr: a(addr), Port: port}
}

// The UDP frontends of udpState.
var udpFrontends = []ipvs.ServiceKey{udpKey("198.18.20.1", 30053), udpKey("198.18.100.1", 53), udpKey("198.18.102.1", 53)}

func TestStaleFrontends(t *testing.T) {
	sctp := func(s State) State {
		svc := s.Services["dns"]
		svc.Ports = slices.Clone(svc.Ports)
		svc.Ports[0].Protocol = SCTP
		s.Services["dns"] = svc
		return s
	}
	sctpKeys := func() []ipvs.ServiceKey {
		var out []ipvs.ServiceKey
		for _, k := range udpFrontends {
			k.Protocol = ipvs.SCTP
			out = append(out, k)
		}
		return out
	}
	noService := State{Node: Node{Addresses: []netip.Addr{a("198.18.20.1")}}}
	for _, tc := range []struct {
		name       string
		have, want State
		stale      []ipvs.ServiceKey
	}{
		{"unchanged", udpState("198.18.1.1", "198.18.1.2"), udpState("198.18.1.1", "198.18.1.2"), nil},
		{"an endpoint added", udpState("198.18.1.1"), udpState("198.18.1.1", "198.18.1.2"), nil},
		{"an endpoint removed", udpState("198.18.1.1", "198.18.1.2"), udpState("198.18.1.1"), udpFrontends},
		{"an endpoint replaced", udpState("198.18.1.1", "198.18.1.2"), udpState("198.18.1.1", "198.18.1.3"), udpFrontends},
		{"the last endpoint removed", udpState("198.18.1.1"), udpState(), udpFrontends},
		{"from no endpoints to some", udpState(), udpState("198.18.1.1"), udpFrontends},
		{"new, with endpoints", noService, udpState("198.18.1.1"), udpFrontends},
		{"new, without endpoints", noService, udpState(), nil},
		{"removed", udpState("198.18.1.1"), noService, udpFrontends},
		{"removed, without endpoints", udpState(), noService, udpFrontends},
		{"SCTP like UDP", sctp(udpState("198.18.1.1", "198.18.1.2")), sctp(udpState("198.18.1.2")), sctpKeys()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pending := map[ipvs.ServiceKey]bool{}
			have := desiredOf(t, tc.have)
			staleFrontends(have, makePlan(have, desiredOf(t, tc.want)), pending)
			got := slices.SortedFunc(func(yield func(ipvs.ServiceKey) bool) {
				for k := range pending {
					if !yield(k) {
						return
					}
				}
			}, compareServiceKeys)
			want := slices.Clone(tc.stale)
			slices.SortFunc(want, compareServiceKeys)
			if !slices.Equal(got, want) {
				t.Errorf("stale frontends %v, want %v", got, want)
			}
		})
	}
	// Nothing applied yet (nil): every datagram frontend with
	// destinations.
	pending := map[ipvs.ServiceKey]bool{}
	staleFrontends(nil, makePlan(nil, desiredOf(t, udpState("198.18.1.1"))), pending)
	if len(pending) != 3 {
		t.Errorf("from nothing: %v", pending)
	}
}

func TestFlowFilters(t *testing.T) {
	cur := desiredOf(t, udpState("198.18.1.2", "198.18.1.1"))
	gone := udpKey("198.18.100.9", 53)
	pending := map[ipvs.ServiceKey]bool{udpKey("198.18.100.1", 53): true, gone: true, udpKey("198.18.20.1", 30053): true}
	got := fmt.Sprint(flowFilters(pending, cur))
	keep := []netip.AddrPort{netip.MustParseAddrPort("198.18.1.1:5353"), netip.MustParseAddrPort("198.18.1.2:5353")}
	want := fmt.Sprint([]conntrack.Filter{
		{Protocol: conntrack.UDP, Addr: a("198.18.20.1"), Port: 30053, Keep: keep},
		{Protocol: conntrack.UDP, Addr: a("198.18.100.1"), Port: 53, Keep: keep},
		{Protocol: conntrack.UDP, Addr: a("198.18.100.9"), Port: 53}, // gone: every flow
	})
	if got != want {
		t.Errorf("filters\n%s\nwant\n%s", got, want)
	}
}

// ctRig is a Proxier over fakes with a conntracktest.Fake.
type ctRig struct {
	p  *Proxier
	ct *conntracktest.Fake
}

func newCTRig(t *testing.T) *ctRig {
	t.Helper()
	r := &ctRig{ct: conntracktest.New()}
	p, err := New(nil, Deps{IPVS: ipvstest.New(), Link: dummytest.New(), Sysctls: sysctltest.New(""),
		Rules: map[Family]Rules{IPv4: &fakeRules{}}, Conntrack: r.ct})
	if err != nil {
		t.Fatal(err)
	}
	r.p = p
	return r
}

func (r *ctRig) sync(t *testing.T, s State) *Result {
	t.Helper()
	res, err := r.p.Sync(context.Background(), &s)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// udpFlow is a flow from the client port to vip answered by backend.
func udpFlow(port uint16, vip, backend string) conntrack.Flow {
	c := netip.AddrPortFrom(a("198.18.20.2"), port)
	return conntrack.Flow{Protocol: conntrack.UDP, Original: conntrack.Tuple{Src: c, Dst: netip.MustParseAddrPort(vip)},
		Reply: conntrack.Tuple{Src: netip.MustParseAddrPort(backend), Dst: c}}
}

func TestSyncDeletesStaleFlows(t *testing.T) {
	r := newCTRig(t)
	// Flows from before the first sync (traffic that raced the rules, or
	// an earlier proxy's): the new frontends' flows no endpoint answers go.
	early := udpFlow(1000, "198.18.100.1:53", "198.18.100.1:53") // no DNAT: the VIP "answered"
	if err := r.ct.Add(early); err != nil {
		t.Fatal(err)
	}
	res := r.sync(t, udpState("198.18.1.1", "198.18.1.2"))
	if res.ConntrackDeleted != 1 || r.ct.Dumps() != 1 || len(r.ct.Flows()) != 0 {
		t.Fatalf("first sync: deleted %d, %d dumps, left %v", res.ConntrackDeleted, r.ct.Dumps(), r.ct.Flows())
	}

	toA := udpFlow(1001, "198.18.100.1:53", "198.18.1.1:5353")
	toB := udpFlow(1002, "198.18.100.1:53", "198.18.1.2:5353")
	nodePortA := udpFlow(1003, "198.18.20.1:30053", "198.18.1.1:5353")
	externalB := udpFlow(1004, "198.18.102.1:53", "198.18.1.2:5353")
	tcpA := udpFlow(1005, "198.18.100.1:80", "198.18.1.1:8080")
	tcpA.Protocol = conntrack.TCP
	if err := r.ct.Add(toA, toB, nodePortA, externalB, tcpA); err != nil {
		t.Fatal(err)
	}
	// No change, or an endpoint added: no dump.
	r.sync(t, udpState("198.18.1.1", "198.18.1.2"))
	r.sync(t, udpState("198.18.1.1", "198.18.1.2", "198.18.1.3"))
	if r.ct.Dumps() != 1 {
		t.Fatalf("syncs that removed no UDP destination dumped the table %d times", r.ct.Dumps()-1)
	}

	// backend-1 leaves: its UDP flows to every frontend go, TCP stays.
	res = r.sync(t, udpState("198.18.1.2", "198.18.1.3"))
	if res.ConntrackDeleted != 2 || r.ct.Dumps() != 2 {
		t.Errorf("removing an endpoint: deleted %d in %d dumps, want 2 in 1", res.ConntrackDeleted, r.ct.Dumps()-1)
	}
	if got, want := r.ct.Flows(), sortedFlows(toB, externalB, tcpA); !slices.Equal(got, want) {
		t.Errorf("left %v, want %v", got, want)
	}

	// The UDP port goes: all its flows go.
	s := udpState("198.18.1.2", "198.18.1.3")
	svc := s.Services["dns"]
	svc.Ports = svc.Ports[1:]
	s.Services["dns"] = svc
	res = r.sync(t, s)
	if res.ConntrackDeleted != 2 {
		t.Errorf("removing the UDP port deleted %d, want 2", res.ConntrackDeleted)
	}
	if got, want := r.ct.Flows(), sortedFlows(tcpA); !slices.Equal(got, want) {
		t.Errorf("left %v, want %v", got, want)
	}
}

func sortedFlows(fs ...conntrack.Flow) []conntrack.Flow {
	f := conntracktest.New()
	if err := f.Add(fs...); err != nil {
		panic(err)
	}
	return f.Flows()
}

func TestAFailedFlowDeleteIsRetried(t *testing.T) {
	r := newCTRig(t)
	r.sync(t, udpState("198.18.1.1", "198.18.1.2"))
	toA := udpFlow(1001, "198.18.100.1:53", "198.18.1.1:5353")
	toB := udpFlow(1002, "198.18.100.1:53", "198.18.1.2:5353")
	if err := r.ct.Add(toA, toB); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	r.ct.FailDeletes(boom)
	s := udpState("198.18.1.2")
	res, err := r.p.Sync(context.Background(), &s)
	var oe *OpError
	if !errors.Is(err, boom) || !errors.As(err, &oe) || oe.Subsystem != SubsystemConntrack || res == nil || res.Plan == nil || res.Plan.Empty() {
		t.Fatalf("sync with a failing delete: %v, %+v", err, res)
	}
	// The kernel state was applied and is known: the next sync plans
	// nothing, but retries the delete.
	r.ct.FailDeletes(nil)
	dumps := r.ct.Dumps()
	res = r.sync(t, s)
	if !res.Plan.Empty() || res.ConntrackDeleted != 1 || r.ct.Dumps() != dumps+1 {
		t.Errorf("retry: plan empty %v, deleted %d, dumps %d", res.Plan.Empty(), res.ConntrackDeleted, r.ct.Dumps()-dumps)
	}
	if got := r.ct.Flows(); !slices.Equal(got, []conntrack.Flow{toB}) {
		t.Errorf("left %v", got)
	}
	// Done: the next no-op sync sends nothing.
	if res = r.sync(t, s); res.ConntrackDeleted != 0 || r.ct.Dumps() != dumps+1 {
		t.Errorf("after the retry: deleted %d, %d more dumps", res.ConntrackDeleted, r.ct.Dumps()-dumps-1)
	}
}

// A retry uses the destinations of its own time: one that came back in
// between keeps its flows.
func TestARetriedFlowDeleteKeepsDestinationsBackSince(t *testing.T) {
	r := newCTRig(t)
	r.sync(t, udpState("198.18.1.1", "198.18.1.2"))
	r.ct.FailDeletes(errors.New("boom"))
	s := udpState("198.18.1.2")
	if _, err := r.p.Sync(context.Background(), &s); err == nil {
		t.Fatal("no error")
	}
	toA := udpFlow(1001, "198.18.100.1:53", "198.18.1.1:5353") // a flow to backend-1 once it is back
	if err := r.ct.Add(toA); err != nil {
		t.Fatal(err)
	}
	r.ct.FailDeletes(nil)
	if res := r.sync(t, udpState("198.18.1.1", "198.18.1.2")); res.ConntrackDeleted != 0 {
		t.Errorf("deleted %d", res.ConntrackDeleted)
	}
	if got := r.ct.Flows(); len(got) != 1 {
		t.Errorf("left %v", got)
	}
}

// Without Deps.Conntrack nothing is tracked or sent.
func TestNoConntrackNoCleanup(t *testing.T) {
	r := newRig(t, nil)
	r.sync(t, udpState("198.18.1.1", "198.18.1.2"))
	if res := r.sync(t, udpState("198.18.1.2")); res.ConntrackDeleted != 0 || len(r.p.pending.flows) != 0 {
		t.Errorf("deleted %d, pending %v", res.ConntrackDeleted, r.p.pending.flows)
	}
}

// TCP destinations drain; their flows are never deleted, so a TCP change
// costs no dump.
func TestTCPChangesSendNothingToConntrack(t *testing.T) {
	r := newCTRig(t)
	r.sync(t, oneService())
	s := oneService()
	web := s.Services["web"]
	web.Endpoints = web.Endpoints[1:]
	s.Services["web"] = web
	r.sync(t, s)
	delete(s.Services, "web")
	r.sync(t, s)
	if r.ct.Dumps() != 0 {
		t.Errorf("TCP-only syncs dumped the conntrack table %d times", r.ct.Dumps())
	}
}

func TestObserverCountsDeletedFlows(t *testing.T) {
	var last *SyncEvent
	ct := conntracktest.New()
	p, err := New(&Config{Observer: ObserverFunc(func(e Event) {
		if se, ok := e.(*SyncEvent); ok {
			last = se
		}
	})}, Deps{IPVS: ipvstest.New(), Link: dummytest.New(), Sysctls: sysctltest.New(""),
		Rules: map[Family]Rules{IPv4: &fakeRules{}}, Conntrack: ct})
	if err != nil {
		t.Fatal(err)
	}
	s := udpState("198.18.1.1", "198.18.1.2")
	if _, err := p.Sync(context.Background(), &s); err != nil {
		t.Fatal(err)
	}
	if err := ct.Add(udpFlow(1001, "198.18.100.1:53", "198.18.1.1:5353")); err != nil {
		t.Fatal(err)
	}
	s = udpState("198.18.1.2")
	if _, err := p.Sync(context.Background(), &s); err != nil {
		t.Fatal(err)
	}
	if last == nil || last.Ops[SubsystemConntrack] != 1 {
		t.Errorf("observed %+v, want 1 conntrack op", last)
	}
}
