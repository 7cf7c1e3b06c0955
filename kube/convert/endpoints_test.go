package convert

import (
	"testing"

	"github.com/ipvskit/ipvskit/proxier"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

func TestConvertEndpoints(t *testing.T) {
	web := []*corev1.Service{service("web", cip, []corev1.ServicePort{tcp("http", 80)})}
	sp := []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}
	one := func(eps ...proxier.Endpoint) map[string]proxier.Service {
		return map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.1"), Ports: pt("http", proxier.TCP, 80, 0), Endpoints: eps}}
	}
	noName := node()
	noName.Name = ""
	t6 := []discoveryv1.EndpointPort{{Name: nil, Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](1)}}
	runConvertCases(t, []convertCase{
		{
			name: "conditions: unset ready and serving are true, unset terminating false",
			svcs: web,
			slices: []*discoveryv1.EndpointSlice{slice("web-1", "web", v4, sp,
				ep("198.18.1.1", conditions(nil, nil, nil)),
				ep("198.18.1.2", terminating),
				ep("198.18.1.3", conditions(ptr.To(false), ptr.To(false), ptr.To(true))),
				ep("198.18.1.4", conditions(ptr.To(false), nil, nil)),
				ep("198.18.1.5", conditions(ptr.To(true), ptr.To(false), ptr.To(false))),
			)},
			want: one(
				wantEP("198.18.1.1", "http", 8080),
				wantEP("198.18.1.2", "http", 8080, isTerminating),
				wantEP("198.18.1.3", "http", 8080, func(e *proxier.Endpoint) { e.Ready, e.Serving, e.Terminating = false, false, true }),
				wantEP("198.18.1.4", "http", 8080, notReady),
				wantEP("198.18.1.5", "http", 8080, func(e *proxier.Endpoint) { e.Serving = false }),
			),
		},
		{
			name: "local: nodeName is the node's; no nodeName is not local",
			svcs: web,
			slices: []*discoveryv1.EndpointSlice{slice("web-1", "web", v4, sp,
				ep("198.18.1.1", local), ep("198.18.1.2", onNode("node-b")), ep("198.18.1.3", func(e *discoveryv1.Endpoint) { e.NodeName = nil }),
			)},
			want: one(wantEP("198.18.1.1", "http", 8080, isLocal), wantEP("198.18.1.2", "http", 8080), wantEP("198.18.1.3", "http", 8080)),
		},
		{
			name:   "a node without a name has no local endpoints, even where nodeName is empty",
			node:   &noName,
			svcs:   web,
			slices: []*discoveryv1.EndpointSlice{slice("web-1", "web", v4, sp, ep("198.18.1.1", onNode("")))},
			want:   one(wantEP("198.18.1.1", "http", 8080)),
		},
		{
			name: "only the first address is used; sorted by address",
			svcs: web,
			slices: []*discoveryv1.EndpointSlice{slice("web-1", "web", v4, sp,
				ep("198.18.1.9"), discoveryv1.Endpoint{Addresses: []string{"198.18.1.2", "198.18.1.3"}},
			)},
			want: one(wantEP("198.18.1.2", "http", 8080), wantEP("198.18.1.9", "http", 8080)),
		},
		{
			name: "a repeat in a later slice replaces, unless it is terminating",
			svcs: web,
			slices: []*discoveryv1.EndpointSlice{
				// Input order differs from name order: name order counts.
				slice("web-b", "web", v4, sp, ep("198.18.1.1", local), ep("198.18.1.2", terminating)),
				slice("web-a", "web", v4, sp, ep("198.18.1.1"), ep("198.18.1.2", terminating, local), ep("198.18.1.3", terminating, local)),
				slice("web-c", "web", v4, sp, ep("198.18.1.3"), ep("198.18.1.2", terminating)),
			},
			want: one(
				wantEP("198.18.1.1", "http", 8080, isLocal),
				wantEP("198.18.1.2", "http", 8080, isTerminating, isLocal),
				wantEP("198.18.1.3", "http", 8080),
			),
		},
		{
			name: "the same address with another port is another endpoint",
			svcs: web,
			slices: []*discoveryv1.EndpointSlice{
				slice("web-a", "web", v4, sp, ep("198.18.1.1")),
				slice("web-b", "web", v4, []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 9090)}, ep("198.18.1.1")),
			},
			want: one(wantEP("198.18.1.1", "http", 8080), wantEP("198.18.1.1", "http", 9090)),
		},
		{
			name: "slices of other Services, namespaces and address types are not used",
			svcs: web,
			slices: []*discoveryv1.EndpointSlice{
				slice("web-1", "web", v4, sp, ep("198.18.1.1")),
				slice("api-1", "api", v4, sp, ep("198.18.1.2")),
				func() *discoveryv1.EndpointSlice {
					s := slice("web-1", "web", v4, sp, ep("198.18.1.3"))
					s.Namespace = "other"
					return s
				}(),
				slice("web-6", "web", v6, sp, ep("2001:db8:1::1")),
				slice("web-f", "web", discoveryv1.AddressTypeFQDN, sp, ep("web.example")),
			},
			want: one(wantEP("198.18.1.1", "http", 8080)),
		},
		{
			name: "bad slices and endpoints are reported",
			svcs: web,
			slices: []*discoveryv1.EndpointSlice{
				slice("web-1", "", v4, sp, ep("198.18.1.1")),
				slice("", "web", v4, sp, ep("198.18.1.2")),
				slice("web-2", "web", v4, []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: nil}}, ep("198.18.1.3")),
				slice("web-3", "web", v4, sp, ep("2001:db8:1::4"), ep("0.0.0.0"), ep("224.0.0.1"), ep("198.18.1.x"),
					discoveryv1.Endpoint{Addresses: nil}, ep("198.18.1.5")),
				slice("web-4", "web", v4, t6, ep("198.18.1.6")),
			},
			want: one(wantEP("198.18.1.5", "http", 8080)),
			skipped: []string{
				"EndpointSlice ns/web-1 has no kubernetes.io/service-name label: ignored",
				`ns/web: EndpointSlice "ns/" has no namespace or no name: ignored`,
				`ns/web: EndpointSlice web-2 lists port "http" without a port number in 1-65535: ignored`,
				`ns/web: EndpointSlice web-3 endpoint address "198.18.1.x" does not parse: ignored`,
				"ns/web: EndpointSlice web-3 endpoint address 0.0.0.0 is not unicast: ignored",
				"ns/web: EndpointSlice web-3 endpoint address 224.0.0.1 is not unicast: ignored",
				"ns/web: EndpointSlice web-3 endpoints[4] has no address: ignored",
				"ns/web: EndpointSlice web-3 of addressType IPv4 lists 2001:db8:1::4: ignored",
				"ns/web: EndpointSlice web-4 lists a port without a name: ignored",
			},
		},
		{
			name: "a slice twice in the input: the later one is used",
			svcs: web,
			slices: []*discoveryv1.EndpointSlice{
				slice("web-1", "web", v4, sp, ep("198.18.1.1")),
				slice("web-1", "web", v4, sp, ep("198.18.1.2")),
			},
			want:    one(wantEP("198.18.1.2", "http", 8080)),
			skipped: []string{"ns/web: EndpointSlice ns/web-1 is in the input twice: the later object is used"},
		},
		{
			name: "a Service twice in the input: the later one is used",
			svcs: []*corev1.Service{
				service("web", cip, []corev1.ServicePort{tcp("http", 80)}),
				service("web", []string{"198.18.100.2"}, []corev1.ServicePort{tcp("http", 80)}),
			},
			want:    map[string]proxier.Service{"ns/web:http": {ClusterIPs: addrs("198.18.100.2"), Ports: pt("http", proxier.TCP, 80, 0)}},
			skipped: []string{"ns/web: is in the input twice: the later object is used"},
		},
	})
}
