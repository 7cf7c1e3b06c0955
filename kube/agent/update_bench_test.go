package agent

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvskit/ipvskit/proxier"
)

// BenchmarkAgentUpdate measures the agent's own cost of one EndpointSlice
// update, from the informer's event (its cache updated, its handler
// called) to the return of the sync that applied it, at 10,000 and 50,000
// ClusterIP Services x 10 endpoints on the fakes (no API server): "update"
// is the incremental path (the slice's Service converted, Proxier.Update),
// "resync" the periodic one (the same, then Proxier.Sync of the whole
// State), "whole" the path after a failure or a node change, which every
// event took before (the cluster converted, Proxier.Sync). The first Sync
// is made before the timer.
//
//	cd kube && go test -run '^$' -bench AgentUpdate -benchtime 20x ./agent
func BenchmarkAgentUpdate(b *testing.B) {
	for _, n := range []int{10000, 50000} {
		svcs, sls := scaleObjects(n, 10)
		f := newFed(b, fedSetup{config: DefaultConfig(), fams: []proxier.Family{proxier.IPv4},
			node: scaleNode(), svcs: svcs, slices: sls})
		start := time.Now()
		f.sync(b)
		b.Logf("%d services: first sync %v", n, time.Since(start))
		added := 0
		for _, path := range []string{"update", "resync", "whole"} {
			b.Run(fmt.Sprintf("services=%d/%s", n, path), func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					s := sls[7].DeepCopy()
					added++
					s.ResourceVersion = fmt.Sprint(added)
					s.Endpoints = append(s.Endpoints, s.Endpoints[0])
					s.Endpoints[len(s.Endpoints)-1].Addresses = []string{benchAddr(netip.MustParseAddr("198.19.255.0"), added%250+1).String()}
					sls[7] = s
					f.clock.Step(time.Millisecond)
					switch path {
					case "resync":
						f.clock.Step(f.a.o.Config.SyncPeriod)
					case "whole":
						f.a.failed = true // as after a failure: converts and Syncs all
					}
					b.StartTimer()
					f.event(kindSlice, s, false)
					f.sync(b)
				}
			})
		}
	}
}

// scaleObjects are n ClusterIP Services, each with one EndpointSlice of
// eps ready endpoints on another node.
func scaleObjects(n, eps int) ([]*corev1.Service, []*discoveryv1.EndpointSlice) {
	svcs := make([]*corev1.Service, n)
	sls := make([]*discoveryv1.EndpointSlice, n)
	for i := range n {
		name := fmt.Sprintf("svc-%d", i)
		svcs[i] = service(name, benchAddr(netip.MustParseAddr("198.18.1.0"), i).String())
		addrs := make([]string, eps)
		for j := range addrs {
			addrs[j] = benchAddr(netip.MustParseAddr("198.19.0.1"), (i*eps+j)%65000).String()
		}
		sls[i] = slice(name, "node-b", addrs...)
		svcs[i].ResourceVersion, sls[i].ResourceVersion = "1", "1"
	}
	return svcs, sls
}

// benchAddr is base plus i, in IPv4.
func benchAddr(base netip.Addr, i int) netip.Addr {
	b := base.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) + uint32(i)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func scaleNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nodeIP.String()}}}}
}
