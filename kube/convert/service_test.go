package convert

import (
	"testing"

	"github.com/ipvskit/ipvskit/proxier"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

const (
	v4 = discoveryv1.AddressTypeIPv4
	v6 = discoveryv1.AddressTypeIPv6
)

var (
	cip   = []string{"198.18.100.1"}
	cip6  = []string{"2001:db8:100::1"}
	cip46 = []string{"198.18.100.1", "2001:db8:100::1"}
)

func pt(name string, proto proxier.Protocol, p, nodePort int) []proxier.Port {
	return []proxier.Port{{Name: name, Protocol: proto, Port: p, NodePort: nodePort}}
}

// webSlice is an IPv4 slice of "web" with one ready remote endpoint for port
// "http" (8080).
func webSlice() *discoveryv1.EndpointSlice {
	return slice("web-1", "web", v4, []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}, ep("198.18.1.1"))
}

func TestConvertServiceTypes(t *testing.T) {
	http := tcp("http", 80)
	httpNP := port("http", corev1.ProtocolTCP, 80, 30080)
	webEP := wantEP("198.18.1.1", "http", 8080)
	runConvertCases(t, []convertCase{
		{
			name:   "ClusterIP",
			svcs:   []*corev1.Service{service("web", cip, []corev1.ServicePort{http})},
			slices: []*discoveryv1.EndpointSlice{webSlice()},
			want: map[string]proxier.Service{"ns/web:http": {
				ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 0), Endpoints: []proxier.Endpoint{webEP},
			}},
		},
		{
			name: "unset type and protocol read as the API server's defaults",
			svcs: []*corev1.Service{service("web", cip, []corev1.ServicePort{port("http", "", 80, 30080)}, ofType(""))},
			slices: []*discoveryv1.EndpointSlice{slice("web-1", "web", v4,
				[]discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}}, ep("198.18.1.1"))},
			want: map[string]proxier.Service{"ns/web:http": {
				ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 0), Endpoints: []proxier.Endpoint{webEP},
			}},
			skipped: []string{"ns/web:http: node port 30080 is ignored for type ClusterIP"},
		},
		{
			name:   "NodePort",
			svcs:   []*corev1.Service{service("web", cip, []corev1.ServicePort{httpNP}, ofType(corev1.ServiceTypeNodePort))},
			slices: []*discoveryv1.EndpointSlice{webSlice()},
			want: map[string]proxier.Service{"ns/web:http": {
				ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 30080), Endpoints: []proxier.Endpoint{webEP},
			}},
		},
		{
			name: "LoadBalancer",
			svcs: []*corev1.Service{service("web", cip, []corev1.ServicePort{httpNP},
				ofType(corev1.ServiceTypeLoadBalancer), ingress(vipIngress("198.19.0.1"), corev1.LoadBalancerIngress{Hostname: "lb.example"}))},
			slices: []*discoveryv1.EndpointSlice{webSlice()},
			want: map[string]proxier.Service{"ns/web:http": {
				ClusterIPs: addrs("198.18.100.1"), LoadBalancerIPs: addrs("198.19.0.1"),
				Ports: pt("http", proxier.TCP, 80, 30080), Endpoints: []proxier.Endpoint{webEP},
			}},
		},
		{
			name: "LoadBalancer without node ports, ingress without ipMode is VIP",
			svcs: []*corev1.Service{service("web", cip, []corev1.ServicePort{http},
				ofType(corev1.ServiceTypeLoadBalancer), ingress(corev1.LoadBalancerIngress{IP: "198.19.0.1"}))},
			want: map[string]proxier.Service{"ns/web:http": {
				ClusterIPs: addrs("198.18.100.1"), LoadBalancerIPs: addrs("198.19.0.1"), Ports: pt("http", proxier.TCP, 80, 0),
			}},
		},
		{
			name: "LoadBalancer ingress with ipMode Proxy is not a VIP",
			svcs: []*corev1.Service{service("web", cip, []corev1.ServicePort{http}, ofType(corev1.ServiceTypeLoadBalancer),
				ingress(corev1.LoadBalancerIngress{IP: "198.19.0.1", IPMode: ptr.To(corev1.LoadBalancerIPModeProxy)}, vipIngress("198.19.0.2")))},
			want: map[string]proxier.Service{"ns/web:http": {
				ClusterIPs: addrs("198.18.100.1"), LoadBalancerIPs: addrs("198.19.0.2"), Ports: pt("http", proxier.TCP, 80, 0),
			}},
			skipped: []string{"ns/web: load-balancer IP 198.19.0.1 has ipMode Proxy: the load balancer sends its traffic to the node, not to the IP"},
		},
		{
			name: "ingress of a type other than LoadBalancer is ignored",
			svcs: []*corev1.Service{service("web", cip, []corev1.ServicePort{http}, ingress(vipIngress("198.19.0.1")))},
			want: map[string]proxier.Service{"ns/web:http": {
				ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 0),
			}},
			skipped: []string{"ns/web: status.loadBalancer.ingress is ignored for type ClusterIP"},
		},
		{
			name: "ExternalName",
			svcs: []*corev1.Service{func() *corev1.Service {
				s := service("ext", nil, []corev1.ServicePort{http}, ofType(corev1.ServiceTypeExternalName))
				s.Spec.ExternalName = "db.example"
				return s
			}()},
			skipped: []string{"ns/ext: type ExternalName: kube-proxy does not proxy it"},
		},
		{
			name:    "headless",
			svcs:    []*corev1.Service{service("db", []string{"None"}, []corev1.ServicePort{tcp("pg", 5432)})},
			slices:  []*discoveryv1.EndpointSlice{slice("db-1", "db", v4, []discoveryv1.EndpointPort{slicePort("pg", corev1.ProtocolTCP, 5432)}, ep("198.18.1.9"))},
			skipped: []string{"ns/db: headless (clusterIP None): kube-proxy does not proxy it"},
		},
		{
			name:    "no cluster IP",
			svcs:    []*corev1.Service{service("web", nil, []corev1.ServicePort{http}, externalIPs("198.19.0.1"))},
			skipped: []string{"ns/web: has no cluster IP: kube-proxy does not proxy it"},
		},
		{
			name: "no namespace",
			svcs: []*corev1.Service{func() *corev1.Service {
				s := service("web", cip, []corev1.ServicePort{http})
				s.Namespace = ""
				return s
			}()},
			skipped: []string{"/web: has no namespace or no name"},
		},
	})
}

func TestConvertPorts(t *testing.T) {
	runConvertCases(t, []convertCase{
		{
			name: "TCP, UDP and SCTP, each a service of its own",
			svcs: []*corev1.Service{service("dns", cip, []corev1.ServicePort{
				port("dns-tcp", corev1.ProtocolTCP, 53, 0), port("dns", corev1.ProtocolUDP, 53, 0), port("sig", corev1.ProtocolSCTP, 3868, 0),
			})},
			slices: []*discoveryv1.EndpointSlice{slice("dns-1", "dns", v4, []discoveryv1.EndpointPort{
				slicePort("dns-tcp", corev1.ProtocolTCP, 1053), slicePort("dns", corev1.ProtocolUDP, 1053), slicePort("sig", corev1.ProtocolSCTP, 3868),
			}, ep("198.18.1.1"))},
			want: map[string]proxier.Service{
				"ns/dns:dns-tcp": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("dns-tcp", proxier.TCP, 53, 0), Endpoints: []proxier.Endpoint{wantEP("198.18.1.1", "dns-tcp", 1053)}},
				"ns/dns:dns":     {ClusterIPs: addrs("198.18.100.1"), Ports: pt("dns", proxier.UDP, 53, 0), Endpoints: []proxier.Endpoint{wantEP("198.18.1.1", "dns", 1053)}},
				"ns/dns:sig":     {ClusterIPs: addrs("198.18.100.1"), Ports: pt("sig", proxier.SCTP, 3868, 0), Endpoints: []proxier.Endpoint{wantEP("198.18.1.1", "sig", 3868)}},
			},
		},
		{
			name: "an unnamed port's ID is the Service's",
			svcs: []*corev1.Service{service("web", cip, []corev1.ServicePort{tcp("", 80)})},
			slices: []*discoveryv1.EndpointSlice{slice("web-1", "web", v4,
				[]discoveryv1.EndpointPort{slicePort("", corev1.ProtocolTCP, 8080)}, ep("198.18.1.1"))},
			want: map[string]proxier.Service{"ns/web": {
				ClusterIPs: addrs("198.18.100.1"), Ports: pt("", proxier.TCP, 80, 0), Endpoints: []proxier.Endpoint{wantEP("198.18.1.1", "", 8080)},
			}},
		},
		{
			name: "a slice lacking a port gives that port none of its endpoints",
			svcs: []*corev1.Service{service("web", cip, []corev1.ServicePort{tcp("http", 80), tcp("admin", 81)})},
			slices: []*discoveryv1.EndpointSlice{
				slice("web-1", "web", v4, []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080), slicePort("admin", corev1.ProtocolTCP, 8081)}, ep("198.18.1.1")),
				slice("web-2", "web", v4, []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}, ep("198.18.1.2")),
			},
			want: map[string]proxier.Service{
				"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 0), Endpoints: []proxier.Endpoint{
					wantEP("198.18.1.1", "http", 8080), wantEP("198.18.1.2", "http", 8080),
				}},
				"ns/web:admin": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("admin", proxier.TCP, 81, 0), Endpoints: []proxier.Endpoint{
					wantEP("198.18.1.1", "admin", 8081),
				}},
			},
		},
		{
			name: "a slice port of the same name but another protocol serves nothing",
			svcs: []*corev1.Service{service("dns", cip, []corev1.ServicePort{port("dns", corev1.ProtocolUDP, 53, 0)})},
			slices: []*discoveryv1.EndpointSlice{slice("dns-1", "dns", v4,
				[]discoveryv1.EndpointPort{slicePort("dns", corev1.ProtocolTCP, 53)}, ep("198.18.1.1"))},
			want: map[string]proxier.Service{"ns/dns:dns": {
				ClusterIPs: addrs("198.18.100.1"), Ports: pt("dns", proxier.UDP, 53, 0),
			}},
		},
		{
			name: "bad ports are skipped, the others kept",
			svcs: []*corev1.Service{service("web", cip, []corev1.ServicePort{
				port("quic", "QUIC", 443, 0), tcp("zero", 0), tcp("http", 80), tcp("http", 8080), tcp("My Port", 81), tcp("a\nb", 82),
			})},
			want: map[string]proxier.Service{"ns/web:http": {
				ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 0),
			}},
			skipped: []string{
				`ns/web:My Port: port name "My Port" is not a DNS label: ignored`,
				"ns/web:a\nb: port name \"a\\nb\" is not a DNS label: ignored",
				`ns/web:http: spec.ports[3] repeats the port name: the first port of the name is used`,
				`ns/web:quic: protocol "QUIC" is not TCP, UDP or SCTP`,
				`ns/web:zero: port 0 is out of range 1-65535`,
			},
		},
		{
			name: "the health-check port goes on the first port's service only",
			svcs: []*corev1.Service{service("web", cip, []corev1.ServicePort{
				port("http", corev1.ProtocolTCP, 80, 30080), port("https", corev1.ProtocolTCP, 443, 30443),
			}, ofType(corev1.ServiceTypeLoadBalancer), externalLocal(32000))},
			want: map[string]proxier.Service{
				"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 30080),
					ExternalTrafficPolicy: proxier.Local, HealthCheckNodePort: 32000},
				"ns/web:https": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("https", proxier.TCP, 443, 30443),
					ExternalTrafficPolicy: proxier.Local},
			},
		},
	})
}

func TestConvertTrafficPolicies(t *testing.T) {
	http := port("http", corev1.ProtocolTCP, 80, 30080)
	slices := []*discoveryv1.EndpointSlice{slice("web-1", "web", v4, []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)},
		ep("198.18.1.1", local), ep("198.18.1.2"))}
	eps := []proxier.Endpoint{wantEP("198.18.1.1", "http", 8080, isLocal), wantEP("198.18.1.2", "http", 8080)}
	noLocal := []*discoveryv1.EndpointSlice{slice("web-1", "web", v4, []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}, ep("198.18.1.2"))}
	runConvertCases(t, []convertCase{
		{
			name:   "externalTrafficPolicy Local on LoadBalancer, with a health check",
			svcs:   []*corev1.Service{service("web", cip, []corev1.ServicePort{http}, ofType(corev1.ServiceTypeLoadBalancer), externalLocal(32000))},
			slices: slices,
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 30080),
				ExternalTrafficPolicy: proxier.Local, HealthCheckNodePort: 32000, Endpoints: eps}},
		},
		{
			name:   "externalTrafficPolicy Local without local endpoints is passed through",
			svcs:   []*corev1.Service{service("web", cip, []corev1.ServicePort{http}, ofType(corev1.ServiceTypeLoadBalancer), externalLocal(32000))},
			slices: noLocal,
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 30080),
				ExternalTrafficPolicy: proxier.Local, HealthCheckNodePort: 32000, Endpoints: []proxier.Endpoint{wantEP("198.18.1.2", "http", 8080)}}},
		},
		{
			name:    "LoadBalancer with externalTrafficPolicy Local but no health-check port",
			svcs:    []*corev1.Service{service("web", cip, []corev1.ServicePort{http}, ofType(corev1.ServiceTypeLoadBalancer), externalLocal(0))},
			want:    map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 30080), ExternalTrafficPolicy: proxier.Local}},
			skipped: []string{"ns/web: has no healthCheckNodePort (type LoadBalancer, externalTrafficPolicy Local): no health check"},
		},
		{
			name: "externalTrafficPolicy Local on NodePort: no health check",
			svcs: []*corev1.Service{service("web", cip, []corev1.ServicePort{http}, ofType(corev1.ServiceTypeNodePort), externalLocal(32000))},
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 30080),
				ExternalTrafficPolicy: proxier.Local}},
			skipped: []string{"ns/web: healthCheckNodePort 32000 is ignored: kube-proxy uses it only for type LoadBalancer " +
				"with externalTrafficPolicy Local (the API server allows it nowhere else)"},
		},
		{
			name: "externalTrafficPolicy Local on ClusterIP without external IPs does not apply",
			svcs: []*corev1.Service{service("web", cip, []corev1.ServicePort{tcp("http", 80)}, externalLocal(0))},
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 0)}},
		},
		{
			name: "externalTrafficPolicy Local on ClusterIP with external IPs applies",
			svcs: []*corev1.Service{service("web", cip, []corev1.ServicePort{tcp("http", 80)}, externalLocal(0), externalIPs("198.19.0.5"))},
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), ExternalIPs: addrs("198.19.0.5"),
				Ports: pt("http", proxier.TCP, 80, 0), ExternalTrafficPolicy: proxier.Local}},
		},
		{
			name:   "internalTrafficPolicy Local",
			svcs:   []*corev1.Service{service("web", cip, []corev1.ServicePort{tcp("http", 80)}, internalLocal)},
			slices: slices,
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 0),
				InternalTrafficPolicy: proxier.Local, Endpoints: eps}},
		},
		{
			name:   "internalTrafficPolicy Local without local endpoints is passed through",
			svcs:   []*corev1.Service{service("web", cip, []corev1.ServicePort{tcp("http", 80)}, internalLocal)},
			slices: noLocal,
			want: map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 0),
				InternalTrafficPolicy: proxier.Local, Endpoints: []proxier.Endpoint{wantEP("198.18.1.2", "http", 8080)}}},
		},
	})
}

func TestConvertAffinity(t *testing.T) {
	http := []corev1.ServicePort{tcp("http", 80)}
	want := func(a *proxier.SessionAffinity) map[string]proxier.Service {
		return map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 0),
			SessionAffinity: a}}
	}
	runConvertCases(t, []convertCase{
		{name: "None", svcs: []*corev1.Service{service("web", cip, http)}, want: want(nil)},
		{name: "ClientIP with a timeout", svcs: []*corev1.Service{service("web", cip, http, clientIP(ptr.To[int32](60)))}, want: want(affinity(60))},
		{name: "ClientIP with the longest timeout", svcs: []*corev1.Service{service("web", cip, http, clientIP(ptr.To[int32](86400)))}, want: want(affinity(86400))},
		{name: "ClientIP without a timeout", svcs: []*corev1.Service{service("web", cip, http, clientIP(nil))}, want: want(affinity(10800))},
		{
			name: "ClientIP without a config", want: want(affinity(10800)),
			svcs: []*corev1.Service{service("web", cip, http, func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP })},
		},
		{
			name: "ClientIP with a timeout out of range", want: want(affinity(10800)),
			svcs:    []*corev1.Service{service("web", cip, http, clientIP(ptr.To[int32](86401)))},
			skipped: []string{"ns/web: session affinity timeoutSeconds 86401 is out of range 1-86400: 10800 is used"},
		},
	})
}
