package convert

import (
	"testing"

	"github.com/ipvskit/ipvskit/proxier"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Issue 21: what Convert writes for a Service's families, a health-check
// port kube-proxy ignores, and a node with an IPv4 link-local address.
func TestConvertIssue21(t *testing.T) {
	sp := []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}
	httpNP := []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 30080)}
	dual := dualNode()
	// 169.254.20.1 is the node's only IPv4 address; fe80::1 never serves.
	linkLocal := Node{Name: testNode, Addresses: addrs("169.254.20.1", "fe80::1"), Zone: "zone-a"}
	zone := func(z ...string) epOpt { return hints(z, nil) }
	runConvertCases(t, []convertCase{
		{
			name: "an IPv6-only NodePort Service on a dual-stack node is served in IPv6 only",
			node: &dual,
			svcs: []*corev1.Service{service("web", cip6, httpNP, ofType(corev1.ServiceTypeNodePort))},
			slices: []*discoveryv1.EndpointSlice{slice("web-6", "web", v6, sp, ep("2001:db8:1::1")),
				slice("web-4", "web", v4, sp, ep("198.18.1.1"))},
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("2001:db8:100::1"),
				IPFamilies: []proxier.Family{proxier.IPv6}, Ports: pt("http", proxier.TCP, 80, 30080),
				Endpoints: []proxier.Endpoint{wantEP("2001:db8:1::1", "http", 8080)}}},
		},
		{
			name: "an IPv6-first dual-stack Service is served in both families",
			node: &dual,
			svcs: []*corev1.Service{service("web", []string{"2001:db8:100::1", "198.18.100.1"}, httpNP, ofType(corev1.ServiceTypeNodePort))},
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1", "2001:db8:100::1"),
				IPFamilies: []proxier.Family{proxier.IPv4, proxier.IPv6}, Ports: pt("http", proxier.TCP, 80, 30080)}},
		},
		{
			name: "a health-check port with externalTrafficPolicy Cluster is left out",
			svcs: []*corev1.Service{service("web", cip, httpNP, ofType(corev1.ServiceTypeLoadBalancer),
				func(s *corev1.Service) { s.Spec.HealthCheckNodePort = 32000 })},
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 30080)}},
			skipped: []string{"ns/web: healthCheckNodePort 32000 is ignored: kube-proxy uses it only for type LoadBalancer " +
				"with externalTrafficPolicy Local (the API server allows it nowhere else)"},
		},
		{
			// The node port is served on 169.254.20.1 (a cluster-policy VIP
			// in IPv4), so zone hints narrow the endpoints, as kube-proxy's
			// do; were the address dropped, only the internal-policy Local
			// cluster IP would be left, which hints do not narrow.
			name: "an IPv4 link-local node address serves node ports",
			node: &linkLocal,
			svcs: []*corev1.Service{service("web", cip, httpNP, ofType(corev1.ServiceTypeNodePort), internalLocal)},
			slices: []*discoveryv1.EndpointSlice{slice("web-1", "web", v4, sp,
				ep("198.18.1.1", zone("zone-a")), ep("198.18.1.2", zone("zone-b")))},
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 30080),
				InternalTrafficPolicy: proxier.Local, Endpoints: []proxier.Endpoint{wantEP("198.18.1.1", "http", 8080)}}},
			wantNode: &proxier.Node{Addresses: addrs("169.254.20.1", "fe80::1")},
		},
	})
}
