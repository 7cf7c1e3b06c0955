package convert

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ipvskit/ipvskit/proxier"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// gen makes varied objects from a seeded source: every type, protocol,
// policy and condition, and, from small pools, the clashes the API server
// would refuse (shared VIPs and node ports, VIPs that are node addresses,
// bad strings), so that Convert's output is checked against Validate on
// more than the tables cover.
type gen struct{ r *rand.Rand }

func (g gen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

func (g gen) chance(p float64) bool { return g.r.Float64() < p }

func (g gen) v4(pool string, n int) string { return fmt.Sprintf("198.%s.%d", pool, g.r.IntN(n)) }

func (g gen) v6(pool string, n int) string {
	return fmt.Sprintf("2001:db8:%s::%x", pool, g.r.IntN(n)+1)
}

func (g gen) ip(fam int, pool4, pool6 string, n int) string {
	if fam == 6 {
		return g.v6(pool6, n)
	}
	return g.v4(pool4, n)
}

func (g gen) boolPtr() *bool {
	switch g.r.IntN(3) {
	case 0:
		return nil
	case 1:
		return ptr.To(true)
	}
	return ptr.To(false)
}

var portNames = []string{"http", "https", "dns", "grpc", "metrics"}

func (g gen) service(i int) *corev1.Service {
	types := []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName, ""}
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: g.pick("a", "b", "c"), Name: fmt.Sprintf("s%d", i)}}
	s.Spec.Type = types[g.r.IntN(len(types))]
	fams := [][]int{{4}, {6}, {4, 6}, {6, 4}}[g.r.IntN(4)]
	for _, f := range fams {
		s.Spec.IPFamilies = append(s.Spec.IPFamilies, map[int]corev1.IPFamily{4: corev1.IPv4Protocol, 6: corev1.IPv6Protocol}[f])
		// A small pool: cluster IPs clash now and then.
		s.Spec.ClusterIPs = append(s.Spec.ClusterIPs, g.ip(f, "18.100", "100", 250))
	}
	switch {
	case g.chance(0.05):
		s.Spec.ClusterIPs, s.Spec.ClusterIP = []string{"None"}, "None"
	case g.chance(0.03):
		s.Spec.ClusterIPs[0] = g.pick("", "bogus", "198.18.0.2", "127.0.0.1", "2001:db8::2", "::ffff:198.18.100.7")
	}
	s.Spec.ClusterIP = s.Spec.ClusterIPs[0]
	if g.chance(0.05) {
		s.Spec.IPFamilies = nil
	}
	for range g.r.IntN(3) {
		s.Spec.ExternalIPs = append(s.Spec.ExternalIPs, g.pick(g.v4("19.0", 20), g.v6("19", 20), "198.18.0.2", "127.0.0.1", "bogus", " "))
	}
	if g.chance(0.5) {
		for range g.r.IntN(3) {
			ing := corev1.LoadBalancerIngress{IP: g.pick(g.v4("19.1", 20), g.v6("1a", 20), "", "bogus", "169.254.1.1")}
			if m := g.r.IntN(3); m > 0 {
				ing.IPMode = ptr.To([]corev1.LoadBalancerIPMode{corev1.LoadBalancerIPModeVIP, corev1.LoadBalancerIPModeProxy}[m-1])
			}
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, ing)
		}
	}
	for range g.r.IntN(3) {
		s.Spec.LoadBalancerSourceRanges = append(s.Spec.LoadBalancerSourceRanges,
			g.pick(" 198.18.64.0/18", "198.18.4.5/24", "0.0.0.0/0", "2001:db8:4::/48", "::/0", "bogus", "198.18.0.0/33"))
	}
	if g.chance(0.3) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = int32(30000 + g.r.IntN(60))
	}
	if g.chance(0.2) {
		s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
	}
	if g.chance(0.2) {
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		if g.chance(0.8) {
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{
				TimeoutSeconds: ptr.To(int32(g.r.IntN(90000) - 10)),
			}}
		}
	}
	nPorts := 1 + g.r.IntN(3)
	for j := range nPorts {
		p := corev1.ServicePort{
			Name:     portNames[g.r.IntN(len(portNames))],
			Protocol: corev1.Protocol(g.pick("TCP", "UDP", "SCTP", "", "QUIC")),
			// 30000 is in the node ports' pool: on a node address (an
			// external IP 198.18.0.2) a port may clash with a node port.
			Port: []int32{80, 443, 53, 8080, 0, 70000, 30000}[g.r.IntN(7)] + int32(j),
		}
		if nPorts == 1 && g.chance(0.3) {
			p.Name = ""
		}
		if g.chance(0.7) {
			p.NodePort = int32(30000 + g.r.IntN(60)) // a small pool: clashes
		}
		s.Spec.Ports = append(s.Spec.Ports, p)
	}
	return s
}

func (g gen) slices(s *corev1.Service) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for k := range g.r.IntN(4) {
		at := []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN}[g.r.IntN(3)]
		sl := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: fmt.Sprintf("%s-%d", s.Name, k),
				Labels: map[string]string{discoveryv1.LabelServiceName: s.Name}},
			AddressType: at,
		}
		for _, p := range s.Spec.Ports {
			if g.chance(0.8) {
				sl.Ports = append(sl.Ports, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Protocol: ptr.To(p.Protocol),
					Port: ptr.To(int32(g.r.IntN(70000)))})
			}
		}
		for range g.r.IntN(6) {
			addr := g.ip(map[bool]int{true: 6, false: 4}[at == discoveryv1.AddressTypeIPv6], "18.1", "1", 12)
			if g.chance(0.05) {
				addr = g.pick("0.0.0.0", "bogus", "2001:db8:1::1", "198.18.1.1", "224.0.0.5")
			}
			e := discoveryv1.Endpoint{
				Addresses:  []string{addr},
				Conditions: discoveryv1.EndpointConditions{Ready: g.boolPtr(), Serving: g.boolPtr(), Terminating: g.boolPtr()},
			}
			if g.chance(0.8) {
				e.NodeName = ptr.To(g.pick("node-a", "node-b", "node-c"))
			}
			if g.chance(0.4) {
				e.Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: g.pick("zone-a", "zone-b")}}}
				if g.chance(0.5) {
					e.Hints.ForNodes = []discoveryv1.ForNode{{Name: g.pick("node-a", "node-b")}}
				}
			}
			sl.Endpoints = append(sl.Endpoints, e)
		}
		out = append(out, sl)
	}
	return out
}

func genInput(seed uint64, n int) ([]*corev1.Service, []*discoveryv1.EndpointSlice) {
	g := gen{rand.New(rand.NewPCG(seed, 1))}
	var svcs []*corev1.Service
	var eps []*discoveryv1.EndpointSlice
	for i := range n {
		s := g.service(i)
		svcs = append(svcs, s)
		eps = append(eps, g.slices(s)...)
	}
	return svcs, eps
}

func testNodes() map[string]Node {
	dual := goldenNode()
	cidrs := dual
	cidrs.NodePortCIDRs = prefixes("198.18.0.0/24")
	v6 := dual
	v6.Families = []proxier.Family{proxier.IPv6}
	v4 := dual
	v4.Families = nil
	return map[string]Node{"IPv4": v4, "IPv6": v6, "dual": dual, "dual with node-port CIDRs": cidrs}
}

// TestConvertIsValid converts a large varied input for several nodes: the
// State must pass Validate, and must not depend on the input's order.
func TestConvertIsValid(t *testing.T) {
	svcs, eps := genInput(1, 600)
	for name, n := range testNodes() {
		t.Run(name, func(t *testing.T) {
			in := Input{Services: svcs, Slices: eps, Node: n}
			state, skipped := Convert(in)
			if err := state.Validate(&proxier.Config{Families: n.Families}); err != nil {
				t.Fatal(err)
			}
			if len(state.Services) < 300 || len(skipped) < 100 {
				t.Errorf("%d services, %d skipped: the generator no longer makes a varied input", len(state.Services), len(skipped))
			}
			r := rand.New(rand.NewPCG(2, 2))
			shuffled := Input{Services: shuffle(r, svcs), Slices: shuffle(r, eps), Node: n}
			state2, skipped2 := Convert(shuffled)
			if d := cmp.Diff(state, state2, cmpOpts); d != "" {
				t.Errorf("State depends on input order (-first +shuffled):\n%s", d)
			}
			if d := cmp.Diff(skipped, skipped2); d != "" {
				t.Errorf("Skipped depends on input order (-first +shuffled):\n%s", d)
			}
		})
	}
}

func shuffle[T any](r *rand.Rand, in []T) []T {
	out := append([]T(nil), in...)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// TestDecodeRoundTrip writes the varied input as kubectl would (a List, in
// YAML) and decodes it: Convert must give the same State as from the
// objects themselves.
func TestDecodeRoundTrip(t *testing.T) {
	svcs, eps := genInput(3, 100)
	list := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	for _, s := range svcs {
		s := s.DeepCopy()
		s.APIVersion, s.Kind = "v1", "Service"
		list.Items = append(list.Items, runtime.RawExtension{Object: s})
	}
	for _, e := range eps {
		e := e.DeepCopy()
		e.APIVersion, e.Kind = "discovery.k8s.io/v1", "EndpointSlice"
		list.Items = append(list.Items, runtime.RawExtension{Object: e})
	}
	out, err := yaml.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	svcs2, eps2, err := Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs2) != len(svcs) || len(eps2) != len(eps) {
		t.Fatalf("decoded %d services, %d slices; want %d, %d", len(svcs2), len(eps2), len(svcs), len(eps))
	}
	n := goldenNode()
	want, wantSkipped := Convert(Input{Services: svcs, Slices: eps, Node: n})
	got, gotSkipped := Convert(Input{Services: svcs2, Slices: eps2, Node: n})
	if d := cmp.Diff(want, got, cmpOpts); d != "" {
		t.Errorf("State (-objects +decoded):\n%s", d)
	}
	if d := cmp.Diff(wantSkipped, gotSkipped); d != "" {
		t.Errorf("Skipped (-objects +decoded):\n%s", d)
	}
}
