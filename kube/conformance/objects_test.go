package conformance

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The corpus's objects live in one namespace; the node is nodeName.
const (
	namespace = "conf"
	nodeName  = "node-a"
	otherNode = "node-b"
)

// The rig around each node (the same for kube-proxy's node and ipvskit's):
//
//	client     198.18.0.2, 198.18.0.3, 2001:db8::2  --  node 198.18.0.1, 2001:db8::1
//	           169.254.0.2 (link-local)                    169.254.0.1 (link-local)
//	backend-b  198.18.1b.2, 2001:db8:1b::2          --  node 198.18.1b.1, 2001:db8:1b::1   (b = 1..4)
//
// The node's IPs (kube-proxy's --node-ip, the converter's Node.Addresses)
// are the client side's. Every backend serves TCP 8080 and 8081 and UDP
// 5353 and 5354 on both families and answers with its name and the peer
// address it saw.
const (
	clientAddr    = "198.18.0.2"
	clientAltAddr = "198.18.0.3" // outside every source range of the corpus
	clientAddr6   = "2001:db8::2"
	nodeAddr      = "198.18.0.1"
	nodeAddr6     = "2001:db8::1"
	backends      = 4
	// linkLocalNodeAddr and linkLocalClientAddr are IPv4 link-local
	// addresses on the same link (issue 21: node ports on them).
	linkLocalNodeAddr   = "169.254.0.1"
	linkLocalClientAddr = "169.254.0.2"
)

// alloc hands out a case's addresses and ports, all from the documentation
// and benchmarking ranges: case k owns 198.18.100.k (cluster IP),
// 198.18.102.k (external IP), 198.18.103.k (load balancer), their IPv6
// twins under 2001:db8:100::, :102::, :103::, node ports 30000+4k.. and
// health-check port 32000+k.
type alloc struct{ k int }

func (a alloc) clusterIP() string  { return fmt.Sprintf("198.18.100.%d", a.k) }
func (a alloc) clusterIP6() string { return fmt.Sprintf("2001:db8:100::%x", a.k) }
func (a alloc) externalIP() string { return fmt.Sprintf("198.18.102.%d", a.k) }
func (a alloc) lbIP() string       { return fmt.Sprintf("198.18.103.%d", a.k) }
func (a alloc) lbIP6() string      { return fmt.Sprintf("2001:db8:103::%x", a.k) }
func (a alloc) nodePort(i int) int32 {
	return int32(30000 + 4*a.k + i)
}
func (a alloc) hcPort() int32 { return int32(32000 + a.k) }

// svc builds a Service of the case.
func (a alloc) svc(name string, opts ...func(*v1.Service)) *v1.Service {
	s := &v1.Service{
		TypeMeta:   metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, SessionAffinity: v1.ServiceAffinityNone},
	}
	for _, o := range opts {
		o(s)
	}
	if s.Spec.ClusterIP == "" {
		ips(a.clusterIP())(s)
	}
	return s
}

// ips sets the cluster IPs (and families, in that order).
func ips(addrs ...string) func(*v1.Service) {
	return func(s *v1.Service) {
		s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.IPFamilies = addrs[0], addrs, nil
		if addrs[0] == v1.ClusterIPNone {
			return
		}
		for _, ip := range addrs {
			f := v1.IPv4Protocol
			if isV6(ip) {
				f = v1.IPv6Protocol
			}
			s.Spec.IPFamilies = append(s.Spec.IPFamilies, f)
		}
		pol := v1.IPFamilyPolicySingleStack
		if len(addrs) > 1 {
			pol = v1.IPFamilyPolicyRequireDualStack
		}
		s.Spec.IPFamilyPolicy = &pol
	}
}

func port(name string, proto v1.Protocol, p, target int32) func(*v1.Service) {
	return func(s *v1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Name: name, Protocol: proto, Port: p, TargetPort: intstr.FromInt32(target)})
	}
}

// typ sets the type; NodePort and LoadBalancer get node ports from a.
func (a alloc) typ(t v1.ServiceType) func(*v1.Service) {
	return func(s *v1.Service) {
		s.Spec.Type = t
		if t == v1.ServiceTypeNodePort || t == v1.ServiceTypeLoadBalancer {
			for i := range s.Spec.Ports {
				s.Spec.Ports[i].NodePort = a.nodePort(i)
			}
		}
		if t == v1.ServiceTypeExternalName {
			s.Spec.ExternalName = "db.example.org"
		}
	}
}

// ingress adds load-balancer ingress IPs; proxyMode marks them ipMode Proxy.
func ingress(proxyMode bool, addrs ...string) func(*v1.Service) {
	return func(s *v1.Service) {
		for _, ip := range addrs {
			in := v1.LoadBalancerIngress{IP: ip}
			if proxyMode {
				m := v1.LoadBalancerIPModeProxy
				in.IPMode = &m
			}
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, in)
		}
	}
}

func externalIPs(addrs ...string) func(*v1.Service) {
	return func(s *v1.Service) { s.Spec.ExternalIPs = append(s.Spec.ExternalIPs, addrs...) }
}

func sourceRanges(r ...string) func(*v1.Service) {
	return func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = r }
}

func eTPLocal(hc int32) func(*v1.Service) {
	return func(s *v1.Service) {
		s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = hc
	}
}

func iTPLocal(s *v1.Service) {
	p := v1.ServiceInternalTrafficPolicyLocal
	s.Spec.InternalTrafficPolicy = &p
}

// affinity sets ClientIP affinity; 0 seconds is what the API server writes
// when none is given (10800: kube-proxy relies on the default being
// written).
func affinity(seconds int32) func(*v1.Service) {
	return func(s *v1.Service) {
		if seconds == 0 {
			seconds = 10800
		}
		s.Spec.SessionAffinity = v1.ServiceAffinityClientIP
		s.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: &seconds}}
	}
}

func noLBNodePorts(s *v1.Service) {
	f := false
	s.Spec.AllocateLoadBalancerNodePorts = &f
	for i := range s.Spec.Ports {
		s.Spec.Ports[i].NodePort = 0
	}
}

// sport is one port an EndpointSlice lists.
type sport struct {
	name  string
	proto v1.Protocol
	port  int32
}

// ep is one endpoint: backend b's address (1-4) and its conditions.
type ep struct {
	b                           int
	ready, serving, terminating *bool
	node                        string
	noNode                      bool
}

func ready(b int, node string) ep { return ep{b: b, ready: ptr(true), node: node} }

// slice builds an EndpointSlice of service svc in the family of v6.
func slice(svc, suffix string, v6 bool, ports []sport, eps ...ep) *discovery.EndpointSlice {
	at := discovery.AddressTypeIPv4
	if v6 {
		at = discovery.AddressTypeIPv6
	}
	s := &discovery.EndpointSlice{
		TypeMeta: metav1.TypeMeta{Kind: "EndpointSlice", APIVersion: "discovery.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: svc + "-" + suffix, Namespace: namespace,
			Labels: map[string]string{discovery.LabelServiceName: svc}},
		AddressType: at,
	}
	for _, p := range ports {
		s.Ports = append(s.Ports, discovery.EndpointPort{Name: ptr(p.name), Protocol: ptr(p.proto), Port: ptr(p.port)})
	}
	for _, e := range eps {
		d := discovery.Endpoint{
			Addresses:  []string{backendAddr(e.b, v6)},
			Conditions: discovery.EndpointConditions{Ready: e.ready, Serving: e.serving, Terminating: e.terminating},
		}
		if !e.noNode {
			n := e.node
			if n == "" {
				n = otherNode
			}
			d.NodeName = &n
		}
		s.Endpoints = append(s.Endpoints, d)
	}
	return s
}

// backendAddr is backend b's address in the rig (see topology).
func backendAddr(b int, v6 bool) string {
	if v6 {
		return fmt.Sprintf("2001:db8:%d::2", 10+b)
	}
	return fmt.Sprintf("198.18.%d.2", 10+b)
}

func isV6(ip string) bool {
	for _, c := range ip {
		if c == ':' {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }
