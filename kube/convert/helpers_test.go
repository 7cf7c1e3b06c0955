package convert

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/ipvskit/ipvskit/proxier"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The builders below make API objects as the API server stores them (with
// its defaults), in namespace "ns", so that tables stay short.

type svcOpt func(*corev1.Service)

// service is a ClusterIP Service with the given cluster IPs (their families
// in ipFamilies) and ports.
func service(name string, clusterIPs []string, ports []corev1.ServicePort, opts ...svcOpt) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.ServiceSpec{
			Type:            corev1.ServiceTypeClusterIP,
			ClusterIPs:      clusterIPs,
			Ports:           ports,
			SessionAffinity: corev1.ServiceAffinityNone,
		},
	}
	if len(clusterIPs) > 0 {
		s.Spec.ClusterIP = clusterIPs[0]
	}
	for _, ip := range clusterIPs {
		fam := corev1.IPv4Protocol
		if strings.Contains(ip, ":") {
			fam = corev1.IPv6Protocol
		}
		if ip != corev1.ClusterIPNone {
			s.Spec.IPFamilies = append(s.Spec.IPFamilies, fam)
		}
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func ofType(t corev1.ServiceType) svcOpt { return func(s *corev1.Service) { s.Spec.Type = t } }

func externalIPs(ips ...string) svcOpt {
	return func(s *corev1.Service) { s.Spec.ExternalIPs = ips }
}

func ingress(ings ...corev1.LoadBalancerIngress) svcOpt {
	return func(s *corev1.Service) { s.Status.LoadBalancer.Ingress = ings }
}

func vipIngress(ip string) corev1.LoadBalancerIngress {
	return corev1.LoadBalancerIngress{IP: ip, IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}
}

func externalLocal(hc int32) svcOpt {
	return func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = hc
	}
}

func internalLocal(s *corev1.Service) {
	s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
}

func clientIP(timeout *int32) svcOpt {
	return func(s *corev1.Service) {
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: timeout}}
	}
}

func sourceRanges(r ...string) svcOpt {
	return func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = r }
}

func port(name string, proto corev1.Protocol, p, nodePort int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Protocol: proto, Port: p, NodePort: nodePort}
}

func tcp(name string, p int32) corev1.ServicePort { return port(name, corev1.ProtocolTCP, p, 0) }

// slice is an EndpointSlice of Service svc in namespace "ns".
func slice(name, svc string, at discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc},
		},
		AddressType: at,
		Ports:       ports,
		Endpoints:   eps,
	}
}

func slicePort(name string, proto corev1.Protocol, p int32) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: ptr.To(name), Protocol: ptr.To(proto), Port: ptr.To(p)}
}

type epOpt func(*discoveryv1.Endpoint)

// ep is a ready endpoint on node "remote".
func ep(addr string, opts ...epOpt) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{
		Addresses:  []string{addr},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
		NodeName:   ptr.To("remote"),
	}
	for _, o := range opts {
		o(&e)
	}
	return e
}

func onNode(n string) epOpt { return func(e *discoveryv1.Endpoint) { e.NodeName = ptr.To(n) } }

func local(e *discoveryv1.Endpoint) { e.NodeName = ptr.To(testNode) }

func conditions(ready, serving, terminating *bool) epOpt {
	return func(e *discoveryv1.Endpoint) {
		e.Conditions = discoveryv1.EndpointConditions{Ready: ready, Serving: serving, Terminating: terminating}
	}
}

// terminating is a serving, terminating endpoint (not ready).
func terminating(e *discoveryv1.Endpoint) {
	conditions(ptr.To(false), ptr.To(true), ptr.To(true))(e)
}

func hints(zones, nodes []string) epOpt {
	return func(e *discoveryv1.Endpoint) {
		e.Hints = &discoveryv1.EndpointHints{}
		for _, z := range zones {
			e.Hints.ForZones = append(e.Hints.ForZones, discoveryv1.ForZone{Name: z})
		}
		for _, n := range nodes {
			e.Hints.ForNodes = append(e.Hints.ForNodes, discoveryv1.ForNode{Name: n})
		}
	}
}

const testNode = "node-a"

// node is the node most tests run on: IPv4 only, address 198.18.0.2.
func node() Node {
	return Node{Name: testNode, Addresses: addrs("198.18.0.2"), Zone: "zone-a"}
}

func dualNode() Node {
	n := node()
	n.Addresses = addrs("198.18.0.2", "2001:db8::2")
	n.Families = []proxier.Family{proxier.IPv4, proxier.IPv6}
	return n
}

// addrs parses s; none is nil, as Convert leaves an empty list.
func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

func prefixes(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range s {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}

// wantEP is what Convert makes of a ready endpoint of port name.
func wantEP(addr, name string, p int, opts ...func(*proxier.Endpoint)) proxier.Endpoint {
	e := proxier.Endpoint{Addr: netip.MustParseAddr(addr), Ports: map[string]int{name: p}, Ready: true, Serving: true}
	for _, o := range opts {
		o(&e)
	}
	return e
}

func isLocal(e *proxier.Endpoint) { e.Local = true }

func notReady(e *proxier.Endpoint) { e.Ready = false }

func isTerminating(e *proxier.Endpoint) { e.Ready, e.Terminating = false, true }

func affinity(secs int) *proxier.SessionAffinity {
	return &proxier.SessionAffinity{Timeout: time.Duration(secs) * time.Second}
}

var cmpOpts = cmp.Options{
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
}

// convertCase is one table row: an input and the whole State and skipped
// list it must give.
type convertCase struct {
	name     string
	svcs     []*corev1.Service
	slices   []*discoveryv1.EndpointSlice
	node     *Node // nil: node()
	want     map[string]proxier.Service
	wantNode *proxier.Node // nil: not compared
	skipped  []string      // Skipped.String() of each
}

func runConvertCases(t *testing.T, cases []convertCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := node()
			if tc.node != nil {
				n = *tc.node
			}
			got, skipped := Convert(Input{Services: tc.svcs, Slices: tc.slices, Node: n})
			want := withFamilies(tc.want)
			if d := cmp.Diff(want, got.Services, cmpOpts); d != "" {
				t.Errorf("services (-want +got):\n%s", d)
			}
			if tc.wantNode != nil {
				if d := cmp.Diff(*tc.wantNode, got.Node, cmpOpts); d != "" {
					t.Errorf("node (-want +got):\n%s", d)
				}
			}
			var gotSkipped []string
			for _, s := range skipped {
				gotSkipped = append(gotSkipped, s.String())
			}
			if d := cmp.Diff(tc.skipped, gotSkipped); d != "" {
				t.Errorf("skipped (-want +got):\n%s", d)
			}
			if err := got.Validate(&proxier.Config{Families: n.Families}); err != nil {
				t.Errorf("invalid state: %v", err)
			}
		})
	}
}

// withFamilies is a copy of want in which a service without IPFamilies has
// those of its cluster IPs, in order: what Convert must write for a
// Service proxied in the families of its cluster IPs, which is every
// Service it proxies; a case that means something else says so.
func withFamilies(want map[string]proxier.Service) map[string]proxier.Service {
	out := map[string]proxier.Service{}
	for id, s := range want {
		if s.IPFamilies == nil {
			for _, a := range s.ClusterIPs {
				s.IPFamilies = append(s.IPFamilies, familyOf(a))
			}
		}
		out[id] = s
	}
	return out
}
