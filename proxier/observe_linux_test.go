package proxier

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/conntrack"
)

// TestIntegrationObserverSeesEveryPhase runs a Proxier with an Observer on
// the real kernel, under both back ends, through a first sync, a change
// that adds a service, drains a TCP endpoint and removes a UDP one (after
// real UDP traffic), a Drain and a Reconcile, and checks that every phase
// took time in some sync and that each kind of event arrived.
func TestIntegrationObserverSeesEveryPhase(t *testing.T) {
	for _, v := range variants {
		be := v.be
		t.Run(v.String(), func(t *testing.T) {
			tp := newTopologyIn(t, v, 1, 2)
			var syncs []*SyncEvent
			var drains, reconciles int
			obs := ObserverFunc(func(e Event) {
				switch e := e.(type) {
				case *SyncEvent:
					syncs = append(syncs, e)
				case *DrainEvent:
					drains++
				case *ReconcileEvent:
					reconciles++
				}
			})
			k := tp.newProxier(t, Config{Backend: be, Observer: obs})
			ct, err := conntrack.New(&conntrack.Config{NetNS: tp.node.Handle()})
			must(t, err)
			t.Cleanup(func() { ct.Close() })
			k.p.ct = ct // as Deps.Conntrack does
			ctx := context.Background()

			s := State{Services: map[string]Service{
				"web": {ClusterIPs: []netip.Addr{a("198.18.130.1")}, Ports: []Port{portHTTP}, Endpoints: tp.endpoints(true, false, []int{0, 1})},
				"dns": tp.udpService("198.18.130.2", 0, 0, 1),
			}}
			if _, err := k.p.Sync(ctx, &s); err != nil {
				t.Fatal(err)
			}
			tp.clients[0].udp(t, ap("198.18.130.2:53"), 4) // flows to both backends
			s.Services["web"] = Service{ClusterIPs: []netip.Addr{a("198.18.130.1")}, Ports: []Port{portHTTP}, Endpoints: tp.endpoints(true, false, []int{0})}
			s.Services["dns"] = tp.udpService("198.18.130.2", 0, 0)
			s.Services["new"] = Service{ClusterIPs: []netip.Addr{a("198.18.130.3")}, Ports: []Port{portHTTP}, Endpoints: tp.endpoints(true, false, []int{1})}
			if _, err := k.p.Sync(ctx, &s); err != nil {
				t.Fatal(err)
			}
			if _, err := k.p.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := k.p.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}

			if len(syncs) != 2 || drains != 1 || reconciles != 1 {
				t.Fatalf("%d sync, %d drain, %d reconcile events; want 2, 1, 1", len(syncs), drains, reconciles)
			}
			var total Phases
			for _, e := range syncs {
				if e.Err != nil {
					t.Errorf("sync event with error %v", e.Err)
				}
				p := e.Phases
				total.Validate += p.Validate
				total.Plan += p.Plan
				total.Start += p.Start
				total.Sets += p.Sets
				total.Rules += p.Rules
				total.IPVS += p.IPVS
				total.Addresses += p.Addresses
				total.Conntrack += p.Conntrack
			}
			for name, d := range map[string]time.Duration{"validate": total.Validate, "plan": total.Plan, "start": total.Start,
				"sets": total.Sets, "rules": total.Rules, "ipvs": total.IPVS, "addresses": total.Addresses, "conntrack": total.Conntrack} {
				if d <= 0 {
					t.Errorf("phase %s took no time in any sync (%+v)", name, total)
				}
			}
			second := syncs[1]
			for _, s := range []Subsystem{SubsystemIPVS, SubsystemSets, SubsystemAddresses} {
				if second.Ops[s] == 0 {
					t.Errorf("the change sent no %s operations: %v", s, second.Ops)
				}
			}
			if second.Draining != 1 {
				t.Errorf("draining after the change: %d, want 1", second.Draining)
			}
			must(t, k.p.Cleanup(ctx))
		})
	}
}
