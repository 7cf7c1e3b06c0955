package convert

import (
	"testing"

	"github.com/ipvskit/ipvskit/proxier"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func TestConvertExternalIPs(t *testing.T) {
	http := []corev1.ServicePort{tcp("http", 80)}
	dual := dualNode()
	runConvertCases(t, []convertCase{
		{
			name: "valid ones kept in order, repeats once, bad ones reported, blank ones not",
			svcs: []*corev1.Service{service("web", cip, http, externalIPs("198.19.0.9", "198.19.0.5", "198.19.0.9", "not-an-ip", " ", "198.19.0.1%eth0"))},
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), ExternalIPs: addrs("198.19.0.9", "198.19.0.5"), Ports: pt("http", proxier.TCP, 80, 0)}},
			skipped: []string{
				`ns/web: external IP "198.19.0.1%eth0" does not parse: ignored`,
				`ns/web: external IP "not-an-ip" does not parse: ignored`,
			},
		},
		{
			name: "leading zeros and IPv4-mapped IPv6 read as kube-proxy reads them",
			svcs: []*corev1.Service{service("web", []string{"198.018.100.001"}, http, externalIPs("::ffff:198.19.0.9"))},
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), ExternalIPs: addrs("198.19.0.9"), Ports: pt("http", proxier.TCP, 80, 0)}},
		},
		{
			name: "an IPv6 external IP on an IPv4 node is not proxied",
			svcs: []*corev1.Service{service("web", cip, http, externalIPs("2001:db8:1::9", "198.19.0.9"))},
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), ExternalIPs: addrs("198.19.0.9"), Ports: pt("http", proxier.TCP, 80, 0)}},
		},
		{
			name:    "an IPv6 external IP of an IPv4-only Service on a dual-stack node is not proxied",
			node:    &dual,
			svcs:    []*corev1.Service{service("web", cip, http, externalIPs("2001:db8:1::9", "198.19.0.9"))},
			want:    map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), ExternalIPs: addrs("198.19.0.9"), Ports: pt("http", proxier.TCP, 80, 0)}},
			skipped: []string{"ns/web: external IP 2001:db8:1::9 is IPv6, a family the Service has no cluster IP of: kube-proxy's IPv6 proxier does not proxy the Service"},
		},
	})
}

func TestConvertSourceRanges(t *testing.T) {
	http := []corev1.ServicePort{tcp("http", 80)}
	lb := func(ips []string, ing []corev1.LoadBalancerIngress, ranges ...string) []*corev1.Service {
		return []*corev1.Service{service("web", ips, http, ofType(corev1.ServiceTypeLoadBalancer), ingress(ing...), sourceRanges(ranges...))}
	}
	want := func(ips, lbIPs []string, ranges ...string) map[string]proxier.Service {
		return map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs(ips...), LoadBalancerIPs: addrs(lbIPs...),
			LoadBalancerSourceRanges: prefixes(ranges...), Ports: pt("http", proxier.TCP, 80, 0)}}
	}
	ing4 := []corev1.LoadBalancerIngress{vipIngress("198.19.0.1")}
	ing46 := []corev1.LoadBalancerIngress{vipIngress("198.19.0.1"), vipIngress("2001:db8:19::1")}
	dual := dualNode()
	runConvertCases(t, []convertCase{
		{
			name: "trimmed, host bits cleared, repeats once",
			svcs: lb(cip, ing4, " 198.18.64.0/18", "198.18.4.5/24 ", "198.18.4.0/24"),
			want: want(cip, []string{"198.19.0.1"}, "198.18.64.0/18", "198.18.4.0/24"),
		},
		{
			name:    "an invalid range is ignored",
			svcs:    lb(cip, ing4, "198.18.64.0/33", "198.18.4.0/24", ""),
			want:    want(cip, []string{"198.19.0.1"}, "198.18.4.0/24"),
			skipped: []string{`ns/web: load-balancer source range "198.18.64.0/33" does not parse: ignored, as kube-proxy does`},
		},
		{
			name:    "only invalid ranges: no restriction",
			svcs:    lb(cip, ing4, "bogus"),
			want:    want(cip, []string{"198.19.0.1"}),
			skipped: []string{`ns/web: load-balancer source range "bogus" does not parse: ignored, as kube-proxy does`},
		},
		{
			name: "a zero range allows any source",
			svcs: lb(cip, ing4, "198.18.4.0/24", "0.0.0.0/0"),
			want: want(cip, []string{"198.19.0.1"}),
		},
		{
			name: "ranges of a family not proxied are left out",
			svcs: lb(cip, ing4, "2001:db8:4::/48", "198.18.4.0/24"),
			want: want(cip, []string{"198.19.0.1"}, "198.18.4.0/24"),
		},
		{
			name: "dual stack, both restricted",
			node: &dual,
			svcs: lb(cip46, ing46, "2001:db8:4::/48", "198.18.4.0/24"),
			want: want(cip46, []string{"198.19.0.1", "2001:db8:19::1"}, "198.18.4.0/24", "2001:db8:4::/48"),
		},
		{
			name: "dual stack, IPv4 restricted: IPv6 allows any source, as two halves",
			node: &dual,
			svcs: lb(cip46, ing46, "198.18.4.0/24"),
			want: want(cip46, []string{"198.19.0.1", "2001:db8:19::1"}, "198.18.4.0/24", "::/1", "8000::/1"),
		},
		{
			name: "dual stack, IPv6 restricted, IPv4 zero range: IPv4 allows any source",
			node: &dual,
			svcs: lb(cip46, ing46, "0.0.0.0/0", "198.18.4.0/24", "2001:db8:4::/48"),
			want: want(cip46, []string{"198.19.0.1", "2001:db8:19::1"}, "0.0.0.0/1", "128.0.0.0/1", "2001:db8:4::/48"),
		},
		{
			name: "dual stack, IPv4 restricted, no IPv6 load-balancer IP: no halves needed",
			node: &dual,
			svcs: lb(cip46, ing4, "198.18.4.0/24"),
			want: want(cip46, []string{"198.19.0.1"}, "198.18.4.0/24"),
		},
	})
}

func TestConvertFamilies(t *testing.T) {
	http := []corev1.ServicePort{tcp("http", 80)}
	httpNP := []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 30080)}
	sp := []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}
	slices := []*discoveryv1.EndpointSlice{
		slice("web-4", "web", v4, sp, ep("198.18.1.1")),
		slice("web-6", "web", v6, sp, ep("2001:db8:1::1", local)),
		slice("web-f", "web", discoveryv1.AddressTypeFQDN, sp, ep("web.example")),
	}
	v6Node := Node{Name: testNode, Addresses: addrs("2001:db8::2"), Families: []proxier.Family{proxier.IPv6}}
	dual := dualNode()
	noIPFamilies := func(s *corev1.Service) { s.Spec.IPFamilies = nil }
	runConvertCases(t, []convertCase{
		{
			name:   "IPv6 single stack on an IPv6 node",
			node:   &v6Node,
			svcs:   []*corev1.Service{service("web", cip6, http, externalIPs("2001:db8:19::9", "198.19.0.9"))},
			slices: slices,
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("2001:db8:100::1"), ExternalIPs: addrs("2001:db8:19::9"),
				Ports: pt("http", proxier.TCP, 80, 0), Endpoints: []proxier.Endpoint{wantEP("2001:db8:1::1", "http", 8080, isLocal)}}},
		},
		{
			name:    "an IPv6 Service on an IPv4 node",
			svcs:    []*corev1.Service{service("web", cip6, http)},
			slices:  slices,
			skipped: []string{"ns/web: has no cluster IP of a proxied family ([IPv4])"},
		},
		{
			name:   "dual stack Service on a dual-stack node",
			node:   &dual,
			svcs:   []*corev1.Service{service("web", cip46, httpNP, ofType(corev1.ServiceTypeNodePort))},
			slices: slices,
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1", "2001:db8:100::1"), Ports: pt("http", proxier.TCP, 80, 30080),
				Endpoints: []proxier.Endpoint{wantEP("198.18.1.1", "http", 8080), wantEP("2001:db8:1::1", "http", 8080, isLocal)}}},
		},
		{
			name:   "IPv6-first dual stack: families by ipFamilies",
			node:   &dual,
			svcs:   []*corev1.Service{service("web", []string{"2001:db8:100::1", "198.18.100.1"}, http)},
			slices: slices,
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1", "2001:db8:100::1"), Ports: pt("http", proxier.TCP, 80, 0),
				Endpoints: []proxier.Endpoint{wantEP("198.18.1.1", "http", 8080), wantEP("2001:db8:1::1", "http", 8080, isLocal)}}},
		},
		{
			name:   "IPv4 single stack on a dual-stack node: no IPv6 endpoints",
			node:   &dual,
			svcs:   []*corev1.Service{service("web", cip, http)},
			slices: slices,
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 0),
				Endpoints: []proxier.Endpoint{wantEP("198.18.1.1", "http", 8080)}}},
		},
		{
			name: "without ipFamilies only spec.clusterIP counts, as in kube-proxy",
			node: &dual,
			svcs: []*corev1.Service{service("web", cip46, http, noIPFamilies)},
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 0)}},
		},
		{
			name: "without ipFamilies an IPv6 spec.clusterIP is IPv6",
			node: &dual,
			svcs: []*corev1.Service{service("web", cip6, http, noIPFamilies)},
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("2001:db8:100::1"), Ports: pt("http", proxier.TCP, 80, 0)}},
		},
		{
			name: "a cluster IP that does not parse or is of the wrong family",
			node: &dual,
			svcs: []*corev1.Service{service("web", []string{"198.18.100.1", "2001:db8:100::1"}, http, func(s *corev1.Service) {
				s.Spec.ClusterIPs = []string{"198.18.100.x", "198.18.100.2"}
			})},
			skipped: []string{
				`ns/web: cluster IP "198.18.100.x" does not parse: not proxied in IPv4`,
				`ns/web: cluster IP 198.18.100.2 is listed for IPv6: not proxied in IPv6`,
				`ns/web: has no cluster IP of a proxied family ([IPv4 IPv6])`,
			},
		},
	})
}
