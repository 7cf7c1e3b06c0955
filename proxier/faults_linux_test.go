package proxier_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/proxier/proxiertest"
)

// TestIntegrationFaultSweep is the fault sweep on the VM's kernel, under
// each netfilter back end and each VIP mode, with a smaller change set than the fakes' sweep
// (TestFaultSweep) and IPv4 only (the emulated VM pays seconds for every
// iptables-restore). Four runs are swept: the first sync (to state A), a
// sync that changes each kind of thing (A to B), the Drain that ends the
// drain B started, and a Cleanup. For every operation of each, a fresh
// Proxier (over clients kept for the shard's whole sweep) brings the
// node to the run's start, the operation fails (cut short: the failure
// that leaves the most undone; the other modes run on the fakes), the run
// reports it, and the same run again must leave the reference tools' view
// of the node (ipvsadm -Sn, the VIP link's addresses, the local routes, and nft list
// ruleset, or ipset save and iptables-save) exactly as a clean run leaves
// it, and the foreign objects untouched; after a sync or a Drain a cluster
// IP answers and the same run again sends nothing. Position i of the four
// runs shares one Proxier, one run after the other, so that the VM makes
// each transition once.
func TestIntegrationFaultSweep(t *testing.T) {
	// Each back end's positions are shared among shards on topologies of
	// their own, run in parallel: the VM's two CPUs stay busy while each
	// shard waits for its execs.
	const shards = 2
	// Each back end once and each VIP mode once (as the other kernel
	// tests, see variants in vmrig_linux_test.go): a fault in the rules
	// and a fault in the VIPs are separate operations of the sweep, and
	// the repair that follows either is the Proxier's, whatever the other
	// choice. The fakes' sweep (TestFaultSweep) covers every mode of
	// failure; all four pairs carry traffic in TestIntegrationProxier.
	pairs := []struct {
		be   proxier.Backend
		mode proxier.VIPMode
	}{{proxier.NFTables, proxier.VIPAddresses}, {proxier.IPTables, proxier.VIPLocalRoutes}}
	for _, pr := range pairs {
		name := pr.be.String()
		if pr.mode == proxier.VIPLocalRoutes {
			name += "-routes"
		}
		for shard := range shards {
			t.Run(fmt.Sprintf("%s-%d", name, shard), func(t *testing.T) {
				t.Parallel()
				sweepKernel(t, proxier.NewFaultRig(t), proxier.Config{Backend: pr.be, VIPMode: pr.mode}, shard, shards)
			})
		}
	}
}

// kernelRun is one of the swept runs: a sync to a state, a Drain or a
// Cleanup, and (from the clean run) its operations and the node after it.
type kernelRun struct {
	name  string
	to    *proxier.State // for a sync
	drain bool
	ops   []proxiertest.Op
	want  map[string]string
}

func (r *kernelRun) run(p *proxier.Proxier) (*proxier.Result, error) {
	ctx := context.Background()
	switch {
	case r.to != nil:
		s := *r.to
		return p.Sync(ctx, &s)
	case r.drain:
		_, err := p.Drain(ctx)
		return nil, err
	}
	return nil, p.Cleanup(ctx)
}

// sweepKernel sweeps the positions i with i%shards == shard.
func sweepKernel(t *testing.T, rig *proxier.FaultRig, cfg proxier.Config, shard, shards int) {
	deps := rig.Deps(t, cfg)
	a, b := kernelStateA(rig), kernelStateB(rig)
	// B moves web off backend-1, which drains; with the shortest
	// MaxDrain, Drain deletes it whatever connections it still counts.
	cfg.MaxDrain = time.Nanosecond
	runs := []*kernelRun{{name: "FirstSync", to: &a}, {name: "Update", to: &b}, {name: "Drain", drain: true}, {name: "Cleanup"}}
	newProxier := func(t *testing.T, in *proxiertest.Injector) *proxier.Proxier {
		p, err := proxier.New(&cfg, in.Wrap(deps))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	// The clean runs, seen by every reference tool.
	in := proxiertest.New()
	p := newProxier(t, in)
	n := 0
	for _, r := range runs {
		in.Reset()
		if _, err := r.run(p); err != nil {
			t.Fatalf("clean %s: %v", r.name, err)
		}
		snap := rig.Snapshot(t, cfg.Backend, true)
		rig.CheckForeign(t, snap)
		if r.to == nil && !r.drain {
			rig.CheckNothingOurs(t, snap)
		}
		r.ops, r.want = in.Ops(), normalize(snap)
		n = max(n, len(r.ops))
		t.Logf("%s: %d operations", r.name, len(r.ops))
	}
	if t.Failed() {
		t.FailNow()
	}

	for i := shard; i < n; i += shards {
		ok := t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			in := proxiertest.New()
			p := newProxier(t, in)
			for _, r := range runs {
				if i >= len(r.ops) {
					in.Reset()
					if _, err := r.run(p); err != nil {
						t.Fatalf("%s without a failure: %v", r.name, err)
					}
					continue
				}
				op := r.ops[i]
				if !t.Run(r.name+"-"+string(op.Subsystem), func(t *testing.T) { failKernel(t, rig, cfg.Backend, p, in, r, op) }) {
					t.FailNow() // the node is not where the next run starts
				}
			}
		})
		if !ok {
			return
		}
	}
	// Every tool, once more: the foreign objects survived the sweep.
	snap := rig.Snapshot(t, cfg.Backend, true)
	rig.CheckForeign(t, snap)
	rig.CheckNothingOurs(t, snap)
}

// failKernel makes r with op failing, then again, and checks the node.
func failKernel(t *testing.T, rig *proxier.FaultRig, be proxier.Backend, p *proxier.Proxier, in *proxiertest.Injector, r *kernelRun, op proxiertest.Op) {
	in.Reset()
	in.FailAt(op.Index, proxiertest.CutShort)
	_, err := r.run(p)
	if ie := in.Injected(); ie == nil || ie.Op != op {
		t.Fatalf("the failure hit %v, want %v", ie, op)
	}
	var oe *proxier.OpError
	if !errors.Is(err, proxiertest.ErrInjected) || !errors.As(err, &oe) || oe.Subsystem != op.Subsystem {
		t.Fatalf("failure of %v: the run returned %v, want a proxier.OpError of %s", op, err, op.Subsystem)
	}
	in.Reset()
	if _, err := r.run(p); err != nil {
		t.Fatalf("after the failure of %v, the run again failed: %v", op, err)
	}
	snap := rig.Snapshot(t, be, false)
	rig.CheckForeign(t, snap)
	got := normalize(snap)
	for _, sec := range sortedKeys(got) {
		if got[sec] != r.want[sec] {
			t.Errorf("after the failure of %v and the run again, %s differs from a clean run's:\n%s", op, sec, diff(r.want[sec], got[sec]))
		}
	}
	if r.to == nil && !r.drain {
		return
	}
	name, err := rig.TCP(t, netip.MustParseAddrPort("198.18.100.1:80"))
	if err != nil || !strings.HasPrefix(name, "backend-") {
		t.Errorf("cluster IP: %q, %v", name, err)
	}
	in.Reset()
	if res, err := r.run(p); err != nil || res != nil && !res.Plan.Empty() || len(in.Ops()) != 0 {
		t.Errorf("the %s after: err %v, ops %v", r.name, err, in.Ops())
	}
}

var (
	kernelHTTP = proxier.Port{Name: "http", Protocol: proxier.TCP, Port: 80, TargetPort: proxier.BackendTCPPort}
	kernelDNS  = proxier.Port{Name: "dns", Protocol: proxier.UDP, Port: 53, TargetPort: proxier.BackendUDPPort}
)

// kernelStateA: a TCP service on backend-1, and a UDP service that B
// removes.
func kernelStateA(rig *proxier.FaultRig) proxier.State {
	_, b1, _ := rig.Backend(0)
	return proxier.State{
		Node: proxier.Node{Addresses: []netip.Addr{rig.NodeAddr()}},
		Services: map[string]proxier.Service{
			"web":  {ClusterIPs: []netip.Addr{addr("198.18.100.1")}, Ports: []proxier.Port{kernelHTTP}, Endpoints: []proxier.Endpoint{{Addr: b1, Ready: true}}},
			"gone": {ClusterIPs: []netip.Addr{addr("198.18.100.9")}, Ports: []proxier.Port{kernelDNS}, Endpoints: []proxier.Endpoint{{Addr: b1, Ready: true}}},
		},
	}
}

// kernelStateB: web moves to backend-2 with another scheduler, gone goes,
// and a service with a node port and a load balancer with source ranges
// come.
func kernelStateB(rig *proxier.FaultRig) proxier.State {
	s := kernelStateA(rig)
	_, b2, _ := rig.Backend(1)
	on2 := []proxier.Endpoint{{Addr: b2, Ready: true}}
	s.Services["web"] = proxier.Service{ClusterIPs: []netip.Addr{addr("198.18.100.1")}, Ports: []proxier.Port{kernelHTTP}, Scheduler: "lc", Endpoints: on2}
	delete(s.Services, "gone")
	s.Services["np"] = proxier.Service{ClusterIPs: []netip.Addr{addr("198.18.100.2")}, Ports: []proxier.Port{withNodePort(kernelHTTP, 30080)}, Endpoints: on2}
	s.Services["lb"] = proxier.Service{Ports: []proxier.Port{kernelHTTP}, LoadBalancerIPs: []netip.Addr{addr("198.18.103.1")},
		LoadBalancerSourceRanges: []netip.Prefix{netip.MustParsePrefix("198.18.20.0/24")}, Endpoints: on2}
	return s
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
