package convert

import (
	"testing"

	"github.com/ipvskit/ipvskit/proxier"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func TestConvertTopology(t *testing.T) {
	sp := []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}
	web := func(opts ...svcOpt) []*corev1.Service {
		return []*corev1.Service{service("web", cip, []corev1.ServicePort{tcp("http", 80)}, opts...)}
	}
	webSlice := func(eps ...discoveryv1.Endpoint) []*discoveryv1.EndpointSlice {
		return []*discoveryv1.EndpointSlice{slice("web-1", "web", v4, sp, eps...)}
	}
	one := func(eps ...proxier.Endpoint) map[string]proxier.Service {
		return map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 0), Endpoints: eps}}
	}
	zone := func(z ...string) epOpt { return hints(z, nil) }
	e := func(last string, opts ...func(*proxier.Endpoint)) proxier.Endpoint {
		return wantEP("198.18.1."+last, "http", 8080, opts...)
	}
	noZone := node()
	noZone.Zone = ""
	dual := dualNode()
	lbLocal := []*corev1.Service{service("web", cip, []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 30080)},
		ofType(corev1.ServiceTypeLoadBalancer), externalLocal(32000))}
	lbWant := func(eps ...proxier.Endpoint) map[string]proxier.Service {
		return map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 30080),
			ExternalTrafficPolicy: proxier.Local, HealthCheckNodePort: 32000, Endpoints: eps}}
	}
	runConvertCases(t, []convertCase{
		{
			name:   "zone hints: ready endpoints of other zones dropped, others kept",
			svcs:   web(),
			slices: webSlice(ep("198.18.1.1", zone("zone-a")), ep("198.18.1.2", zone("zone-b")), ep("198.18.1.3", zone("zone-b", "zone-a")), ep("198.18.1.4", terminating)),
			want:   one(e("1"), e("3"), e("4", isTerminating)),
		},
		{
			name:   "zone hints ignored when a ready endpoint has none",
			svcs:   web(),
			slices: webSlice(ep("198.18.1.1", zone("zone-a")), ep("198.18.1.2"), ep("198.18.1.3", zone("zone-b"))),
			want:   one(e("1"), e("2"), e("3")),
		},
		{
			name:   "zone hints ignored when none is for the node's zone",
			svcs:   web(),
			slices: webSlice(ep("198.18.1.1", zone("zone-b")), ep("198.18.1.2", zone("zone-c"))),
			want:   one(e("1"), e("2")),
		},
		{
			name:   "zone hints ignored when the node has no zone",
			node:   &noZone,
			svcs:   web(),
			slices: webSlice(ep("198.18.1.1", zone("zone-a")), ep("198.18.1.2", zone("zone-b"))),
			want:   one(e("1"), e("2")),
		},
		{
			name:   "no ready endpoints: no topology",
			svcs:   web(),
			slices: webSlice(ep("198.18.1.1", zone("zone-a"), terminating), ep("198.18.1.2", zone("zone-b"), terminating)),
			want:   one(e("1", isTerminating), e("2", isTerminating)),
		},
		{
			name: "node hints come before zone hints",
			svcs: web(),
			slices: webSlice(ep("198.18.1.1", hints([]string{"zone-b"}, []string{testNode}), local),
				ep("198.18.1.2", hints([]string{"zone-a"}, []string{"node-b"}))),
			want: one(e("1", isLocal)),
		},
		{
			name: "node hints ignored when one is missing: zone hints then",
			svcs: web(),
			slices: webSlice(ep("198.18.1.1", hints([]string{"zone-b"}, []string{testNode}), local),
				ep("198.18.1.2", hints([]string{"zone-a"}, nil))),
			want: one(e("2")),
		},
		{
			name:   "internalTrafficPolicy Local, not externally accessible: hints not used",
			svcs:   web(internalLocal),
			slices: webSlice(ep("198.18.1.1", zone("zone-a")), ep("198.18.1.2", zone("zone-b"), local)),
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 0),
				InternalTrafficPolicy: proxier.Local, Endpoints: []proxier.Endpoint{e("1"), e("2", isLocal)}}},
		},
		{
			name:   "externalTrafficPolicy Local: a local endpoint of another zone is kept for the local VIPs, and reported",
			svcs:   lbLocal,
			slices: webSlice(ep("198.18.1.1", zone("zone-b"), local), ep("198.18.1.2", zone("zone-a")), ep("198.18.1.3", zone("zone-b"))),
			want:   lbWant(e("1", isLocal), e("2")),
			skipped: []string{"ns/web:http: endpoint 198.18.1.1:8080 is not hinted for zone zone-a, but a local-policy VIP uses it: " +
				"kept, so the cluster-policy VIPs use it too (kube-proxy's would not)"},
		},
		{
			name: "both policies Local: no cluster-policy VIP to narrow",
			svcs: []*corev1.Service{service("web", cip, []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 30080)},
				ofType(corev1.ServiceTypeNodePort), externalLocal(0), internalLocal)},
			slices: webSlice(ep("198.18.1.1", zone("zone-b"), local), ep("198.18.1.2", zone("zone-a")), ep("198.18.1.3", zone("zone-b"))),
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 30080),
				ExternalTrafficPolicy: proxier.Local, InternalTrafficPolicy: proxier.Local, Endpoints: []proxier.Endpoint{e("1", isLocal), e("2"), e("3")}}},
		},
		{
			name: "per family: IPv4 narrowed, IPv6 not (an endpoint without hints)",
			node: &dual,
			svcs: []*corev1.Service{service("web", cip46, []corev1.ServicePort{tcp("http", 80)})},
			slices: []*discoveryv1.EndpointSlice{
				slice("web-4", "web", v4, sp, ep("198.18.1.1", zone("zone-a")), ep("198.18.1.2", zone("zone-b"))),
				slice("web-6", "web", v6, sp, ep("2001:db8:1::1", zone("zone-a")), ep("2001:db8:1::2")),
			},
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1", "2001:db8:100::1"), Ports: pt("http", proxier.TCP, 80, 0),
				Endpoints: []proxier.Endpoint{e("1"), wantEP("2001:db8:1::1", "http", 8080), wantEP("2001:db8:1::2", "http", 8080)}}},
		},
	})
}
