package convert

import (
	"net/netip"

	"testing"

	"github.com/ipvskit/ipvskit/proxier"
	corev1 "k8s.io/api/core/v1"
)

func TestConvertConflicts(t *testing.T) {
	http := []corev1.ServicePort{tcp("http", 80)}
	np := func(name string, p, nodePort int32) []corev1.ServicePort {
		return []corev1.ServicePort{port(name, corev1.ProtocolTCP, p, nodePort)}
	}
	runConvertCases(t, []convertCase{
		{
			name: "an external IP and port two Services have: the first ID keeps it",
			svcs: []*corev1.Service{
				service("b", []string{"198.18.100.2"}, http, externalIPs("198.19.0.1")),
				service("a", []string{"198.18.100.1"}, http, externalIPs("198.19.0.1")),
				service("c", []string{"198.18.100.3"}, []corev1.ServicePort{tcp("http", 81)}, externalIPs("198.19.0.1")),
			},
			want: map[string]proxier.Service{
				"ns/a:http": {ClusterIPs: addrs("198.18.100.1"), ExternalIPs: addrs("198.19.0.1"), Ports: pt("http", proxier.TCP, 80, 0)},
				"ns/b:http": {ClusterIPs: addrs("198.18.100.2"), Ports: pt("http", proxier.TCP, 80, 0)},
				"ns/c:http": {ClusterIPs: addrs("198.18.100.3"), ExternalIPs: addrs("198.19.0.1"), Ports: pt("http", proxier.TCP, 81, 0)},
			},
			skipped: []string{"ns/b:http: external IP 198.19.0.1 port 80/TCP is ns/a:http's too: left out"},
		},
		{
			name: "a cluster IP that is a node address is left out, and the Service with it",
			svcs: []*corev1.Service{service("web", []string{"198.18.0.2"}, http)},
			skipped: []string{
				"ns/web:http: cluster IP 198.18.0.2 is a node address: left out",
				"ns/web:http: has no virtual IP, node port or health-check port left",
			},
		},
		{
			name: "unusable VIPs are left out; an external IP that is a node address is kept",
			svcs: []*corev1.Service{service("web", cip, http, externalIPs("127.0.0.1", "169.254.0.1", "198.18.0.2"),
				ofType(corev1.ServiceTypeLoadBalancer), ingress(vipIngress("0.0.0.0")))},
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), ExternalIPs: addrs("198.18.0.2"), Ports: pt("http", proxier.TCP, 80, 0)}},
			skipped: []string{
				"ns/web:http: external IP 127.0.0.1 is not a usable VIP (unspecified, multicast, loopback or link-local): left out",
				"ns/web:http: external IP 169.254.0.1 is not a usable VIP (unspecified, multicast, loopback or link-local): left out",
				"ns/web:http: load-balancer IP 0.0.0.0 is not a usable VIP (unspecified, multicast, loopback or link-local): left out",
			},
		},
		{
			// On the node's address a frontend and a node port (or a
			// health-check port) at the same port would be one virtual
			// server: the later ID's is left out, as Validate refuses it.
			name: "an external or load-balancer IP on a node address at an earlier ID's node port, and the reverse",
			svcs: []*corev1.Service{
				service("a", []string{"198.18.100.1"}, np("http", 80, 30080), ofType(corev1.ServiceTypeNodePort)),
				service("b", []string{"198.18.100.2"}, []corev1.ServicePort{tcp("http", 30080)}, externalIPs("198.18.0.2")),
				service("c", []string{"198.18.100.3"}, []corev1.ServicePort{tcp("http", 30090)}, ofType(corev1.ServiceTypeLoadBalancer),
					ingress(vipIngress("198.18.0.2"))),
				service("d", []string{"198.18.100.4"}, np("http", 80, 30090), ofType(corev1.ServiceTypeNodePort)),
				service("e", []string{"198.18.100.5"}, np("http", 81, 30091), ofType(corev1.ServiceTypeLoadBalancer), externalLocal(30090)),
			},
			want: map[string]proxier.Service{
				"ns/a:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 30080)},
				"ns/b:http": {ClusterIPs: addrs("198.18.100.2"), Ports: pt("http", proxier.TCP, 30080, 0)},
				"ns/c:http": {ClusterIPs: addrs("198.18.100.3"), LoadBalancerIPs: addrs("198.18.0.2"), Ports: pt("http", proxier.TCP, 30090, 0)},
				"ns/d:http": {ClusterIPs: addrs("198.18.100.4"), Ports: pt("http", proxier.TCP, 80, 0)},
				"ns/e:http": {ClusterIPs: addrs("198.18.100.5"), Ports: pt("http", proxier.TCP, 81, 30091), ExternalTrafficPolicy: proxier.Local},
			},
			skipped: []string{
				"ns/b:http: external IP 198.18.0.2 is a node address, and port 30080/TCP a node port of ns/a:http there: left out",
				"ns/d:http: node port 30090/TCP is ns/c:http's port on a node address: left out",
				"ns/e:http: health-check node port 30090 is ns/c:http's port on a node address: left out",
			},
		},
		{
			name: "a node port two Services have; a health-check port that is a node port",
			svcs: []*corev1.Service{
				service("a", []string{"198.18.100.1"}, np("http", 80, 30080), ofType(corev1.ServiceTypeNodePort)),
				service("b", []string{"198.18.100.2"}, np("http", 80, 30080), ofType(corev1.ServiceTypeNodePort)),
				service("c", []string{"198.18.100.3"}, np("http", 80, 30081), ofType(corev1.ServiceTypeLoadBalancer), externalLocal(30080)),
				service("d", []string{"198.18.100.4"}, []corev1.ServicePort{port("dns", corev1.ProtocolUDP, 53, 30080)}, ofType(corev1.ServiceTypeNodePort)),
			},
			want: map[string]proxier.Service{
				"ns/a:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 30080)},
				"ns/b:http": {ClusterIPs: addrs("198.18.100.2"), Ports: pt("http", proxier.TCP, 80, 0)},
				"ns/c:http": {ClusterIPs: addrs("198.18.100.3"), Ports: pt("http", proxier.TCP, 80, 30081), ExternalTrafficPolicy: proxier.Local},
				"ns/d:dns":  {ClusterIPs: addrs("198.18.100.4"), Ports: pt("dns", proxier.UDP, 53, 30080)},
			},
			skipped: []string{
				"ns/b:http: node port 30080/TCP is ns/a:http's too: left out",
				"ns/c:http: health-check node port 30080 is ns/a:http's too: left out",
			},
		},
		{
			name: "a node port out of range",
			svcs: []*corev1.Service{service("a", cip, np("http", 80, 70000), ofType(corev1.ServiceTypeNodePort))},
			want: map[string]proxier.Service{
				"ns/a:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 0)},
			},
			skipped: []string{"ns/a:http: node port 70000 is out of range 1-65535"},
		},
	})
}

func TestConvertNode(t *testing.T) {
	cidrs := func(n Node, p ...string) *Node { n.NodePortCIDRs = prefixes(p...); return &n }
	bad := node()
	bad.Addresses = append(addrs("0.0.0.0"), bad.Addresses...)
	runConvertCases(t, []convertCase{
		{
			name:     "addresses as given, no CIDRs",
			wantNode: &proxier.Node{Addresses: addrs("198.18.0.2")},
		},
		{
			name:     "CIDRs with host bits cleared",
			node:     cidrs(node(), "198.18.0.2/24"),
			wantNode: &proxier.Node{Addresses: addrs("198.18.0.2"), NodePortCIDRs: prefixes("198.18.0.0/24")},
		},
		{
			name:     "dual stack: a family without a CIDR serves node ports on all its addresses",
			node:     cidrs(dualNode(), "198.18.0.0/24"),
			wantNode: &proxier.Node{Addresses: addrs("198.18.0.2", "2001:db8::2"), NodePortCIDRs: prefixes("198.18.0.0/24", "::/0")},
		},
		{
			name:     "dual stack: only IPv6 CIDRs",
			node:     cidrs(dualNode(), "2001:db8::/64"),
			wantNode: &proxier.Node{Addresses: addrs("198.18.0.2", "2001:db8::2"), NodePortCIDRs: prefixes("2001:db8::/64", "0.0.0.0/0")},
		},
		{
			name: "bad addresses and CIDRs are left out",
			node: func() *Node {
				n := cidrs(bad, "198.18.0.0/24")
				n.NodePortCIDRs = append(n.NodePortCIDRs, netip.Prefix{})
				return n
			}(),
			wantNode: &proxier.Node{Addresses: addrs("198.18.0.2"), NodePortCIDRs: prefixes("198.18.0.0/24")},
			skipped: []string{
				"node address 0.0.0.0 is not a unicast address: left out",
				"node-port CIDR invalid Prefix is not a prefix: left out",
			},
		},
	})
}
