package proxier

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
)

// bigState is n ClusterIP services with 10 ready endpoints each.
func bigState(n int) *State {
	s := &State{Services: make(map[string]Service, n)}
	for i := range n {
		eps := make([]Endpoint, 10)
		for j := range eps {
			k := i*10 + j
			eps[j] = Endpoint{Addr: netip.AddrFrom4([4]byte{198, 18, byte(k >> 8), byte(k)}), Ready: true}
		}
		s.Services[fmt.Sprintf("svc-%d", i)] = Service{
			ClusterIPs: []netip.Addr{netip.AddrFrom4([4]byte{198, 19, byte(i >> 8), byte(i)})},
			Ports:      []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: 8080}},
			Endpoints:  eps,
		}
	}
	return s
}

// BenchmarkSyncNoChange is the user-space cost of a sync that sends nothing:
// validating, computing and diffing 10,000 services.
func BenchmarkSyncNoChange(b *testing.B) {
	r := newRig(b, nil)
	s := bigState(10000)
	if _, err := r.p.Sync(context.Background(), s); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		res, err := r.p.Sync(context.Background(), s)
		if err != nil || !res.Plan.Empty() {
			b.Fatalf("err %v, empty %v", err, res.Plan.Empty())
		}
	}
}

// BenchmarkPlanInitial is the user-space cost of a first sync's plan:
// validating and computing 10,000 services and diffing them against nothing.
func BenchmarkPlanInitial(b *testing.B) {
	s := bigState(10000)
	c := &Config{}
	b.ResetTimer()
	for range b.N {
		if err := s.Validate(c); err != nil {
			b.Fatal(err)
		}
		if pl := makePlan(nil, compute(s, c)); pl.IPVSAdd.Len() != 110000 {
			b.Fatalf("%d requests", pl.IPVSAdd.Len())
		}
	}
}

// BenchmarkUpdateOneEndpoint is the user-space cost of an Update that adds
// one endpoint to one of 50,000 services: it should not depend on the
// 50,000.
func BenchmarkUpdateOneEndpoint(b *testing.B) {
	r := newRig(b, nil)
	s := bigState(50000)
	if _, err := r.p.Sync(context.Background(), s); err != nil {
		b.Fatal(err)
	}
	svc := s.Services["svc-7"]
	with := svc
	with.Endpoints = append(slices.Clone(svc.Endpoints), Endpoint{Addr: netip.MustParseAddr("198.18.250.1"), Ready: true})
	b.ResetTimer()
	for i := range b.N {
		next := &with
		if i%2 == 1 {
			next = &svc
		}
		res, err := r.p.Update(context.Background(), map[string]*Service{"svc-7": next})
		if err != nil || res.Plan.IPVSAdd.Len()+res.Plan.IPVSDelete.Len() != 1 {
			b.Fatalf("err %v, plan %v", err, res.Plan)
		}
	}
}

// BenchmarkSyncInitial is a first sync of 50,000 services on the fakes:
// the user-space cost the Update benchmarks are compared with.
func BenchmarkSyncInitial(b *testing.B) {
	s := bigState(50000)
	for range b.N {
		r := newRig(b, nil)
		if _, err := r.p.Sync(context.Background(), s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInitialUserSpace is the user-space part of a first sync, with
// nothing applied: validating the State, computing what it asks of the
// kernel and planning it against what a first sync reads back from a fresh
// node (nothing, and empty rulesets: the ledger), at 10,000 and 50,000
// services x 10 endpoints (issue 28's bar: at most 10% of the initial sync).
func BenchmarkInitialUserSpace(b *testing.B) {
	for _, n := range []int{10000, 50000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) { benchInitialUserSpace(b, bigState(n), 11*n) })
	}
}

// BenchmarkInitialUserSpaceNodePorts is BenchmarkInitialUserSpace at
// 10,000 services whose port has a node port too, on a node with two
// addresses: three virtual servers a port, which choose the same
// destinations.
func BenchmarkInitialUserSpaceNodePorts(b *testing.B) {
	const n = 10000
	s := bigState(n)
	s.Node.Addresses = []netip.Addr{netip.MustParseAddr("198.20.0.1"), netip.MustParseAddr("198.20.0.2")}
	for i := range n {
		id := fmt.Sprintf("svc-%d", i)
		svc := s.Services[id]
		svc.Ports = []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: 8080, NodePort: 30000 + i}}
		s.Services[id] = svc
	}
	benchInitialUserSpace(b, s, 3*11*n)
}

// benchInitialUserSpace validates s, computes it and plans it against the
// ledger of a fresh node, b.N times: a plan of requests IPVS requests.
func benchInitialUserSpace(b *testing.B, s *State, requests int) {
	c := &Config{}
	ledger := &desired{servers: map[ipvs.ServiceKey]*virtualServer{}, vips: map[netip.Addr]bool{},
		rules: map[Family]*iptables.Ruleset{IPv4: iptables.NewRuleset(IPv4, c.options(IPv4))}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := s.Validate(c); err != nil {
			b.Fatal(err)
		}
		if pl := makePlan(ledger, compute(s, c)); pl.IPVSAdd.Len() != requests || len(pl.Rules) != 1 || len(pl.RulesAfter) != 0 {
			b.Fatalf("%d requests", pl.IPVSAdd.Len())
		}
	}
}
