package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/proxier"
)

// BenchmarkAgentSLIKernel is BenchmarkAgentSLI on the real kernel: for
// each netfilter back end an agent on OpenKernel's clients in a node
// namespace of its own, against one API server holding n ClusterIP
// Services x 10 endpoints (1,000 or 10,000). No traffic: a destination is
// in the kernel when the Proxier's Update that added it returns (its IPVS
// batch acked; what follows in the Update, addresses and conntrack, has
// nothing to do for an endpoint added). Run it in the VM rig:
//
//	scripts/vmtest -C kube -run '^$' -bench 'AgentSLIKernel/services=10000$' -benchtime 1x -timeout 120m ./agent/
func BenchmarkAgentSLIKernel(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			probe := testutil.NewNetNS(b)
			testutil.RequireIPVS(b, probe)
			testutil.RequireDummy(b, probe)
			cl := newSLICluster(b, n)
			for _, backend := range []proxier.Backend{proxier.IPTables, proxier.NFTables} {
				b.Run(fmt.Sprintf("backend=%v", backend), func(b *testing.B) {
					for range b.N {
						node := testutil.NewNetNS(b)
						k, err := OpenKernel(node.Handle())
						if err != nil {
							b.Fatal(err)
						}
						r := &rig{srv: cl.srv, c: cl.c, woken: make(chan struct{}, 1), ctx: context.Background()}
						cfg := DefaultConfig()
						cfg.HealthzBindAddress, cfg.MetricsBindAddress = "127.0.0.1:0", "127.0.0.1:0"
						cfg.MinSyncPeriod = *sliMinSync
						cl.measure(b, r, func() {
							r.start(b, Options{Config: cfg, NodeName: testNode, Client: r.c, NewProxier: k.NewProxier,
								SetTimeouts: k.SetTimeouts, NodeAddresses: k.NodeAddresses, Proxier: proxier.Config{Backend: backend},
								ReconcilePeriod: *sliReconcile})
						}, nil)
						if err := k.Close(); err != nil {
							b.Error(err)
						}
					}
				})
			}
		})
	}
}
