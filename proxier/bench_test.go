package proxier

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
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
