// Package walk makes seeded random walks of Service and EndpointSlice
// events over a small cluster, for the tests that hold the converter's and
// the agent's incremental paths to their whole ones. Its pools are small on
// purpose, so that Services contend for VIPs and node ports, slices repeat
// endpoints, and every kind of Service and endpoint the converter knows
// comes up within a few hundred steps.
package walk

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeName and Zone are the walk's node (its endpoints' nodes are this one
// or "node-b"), NodeIPv4 and NodeIPv6 its addresses: some external and
// load-balancer IPs of the walk are these.
const (
	NodeName  = "node-a"
	Zone      = "zone-a"
	NodeIPv4  = "198.18.0.10"
	NodeIPv6  = "2001:db8::10"
	Namespace = "ns"
)

// Event is one step: a Service or an EndpointSlice set (added or changed)
// or deleted. Exactly one of Service and Slice is set; Delete removes the
// object of its namespace and name.
type Event struct {
	Service *corev1.Service
	Slice   *discoveryv1.EndpointSlice
	Delete  bool
}

func (e Event) String() string {
	verb := "set"
	if e.Delete {
		verb = "delete"
	}
	if e.Service != nil {
		return fmt.Sprintf("%s Service %s/%s", verb, e.Service.Namespace, e.Service.Name)
	}
	return fmt.Sprintf("%s EndpointSlice %s/%s", verb, e.Slice.Namespace, e.Slice.Name)
}

// Walk makes events and keeps the cluster they leave.
type Walk struct {
	r        *rand.Rand
	services map[string]*corev1.Service
	slices   map[string]*discoveryv1.EndpointSlice
	version  int
}

// New returns a walk seeded with seed: the same seed, the same events.
func New(seed uint64) *Walk {
	return &Walk{r: rand.New(rand.NewPCG(seed, 0x1bc5)), services: map[string]*corev1.Service{},
		slices: map[string]*discoveryv1.EndpointSlice{}}
}

// Services and Slices are the cluster now, sorted by name.
func (w *Walk) Services() []*corev1.Service {
	return sortedValues(w.services)
}

func (w *Walk) Slices() []*discoveryv1.EndpointSlice {
	return sortedValues(w.slices)
}

func sortedValues[T any](m map[string]T) []T {
	var out []T
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

var serviceNames = []string{"a", "b", "c", "d", "e", "f", "g", "h"}

// Next makes the next event and applies it to the cluster.
func (w *Walk) Next() Event {
	w.version++
	switch n := w.r.IntN(10); {
	case n < 3:
		s := w.service()
		w.services[s.Name] = s
		return Event{Service: s}
	case n < 4:
		name := pick(w.r, serviceNames)
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name}}
		delete(w.services, name)
		return Event{Service: s, Delete: true}
	case n < 8:
		s := w.slice()
		w.slices[s.Name] = s
		return Event{Slice: s}
	default:
		name := w.sliceName()
		s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name}}
		delete(w.slices, name)
		return Event{Slice: s, Delete: true}
	}
}

func (w *Walk) sliceName() string {
	return fmt.Sprintf("%s-%d", pick(w.r, serviceNames), w.r.IntN(3))
}

func pick[T any](r *rand.Rand, from []T) T { return from[r.IntN(len(from))] }

// chance is true with probability 1/n.
func chance(r *rand.Rand, n int) bool { return r.IntN(n) == 0 }

func (w *Walk) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: Namespace, Name: name, ResourceVersion: fmt.Sprint(w.version)}
}

var (
	clusterIPv4  = []string{"198.18.1.1", "198.18.1.2", "198.18.1.3", "198.18.1.4", "198.18.1.5", "198.18.1.6", "198.18.1.7", NodeIPv4}
	clusterIPv6  = []string{"2001:db8::1:1", "2001:db8::1:2", "2001:db8::1:3"}
	externalIPs  = []string{"198.18.2.1", "198.18.2.2", NodeIPv4, "2001:db8::2:1", NodeIPv6, "127.0.0.1", "bad"}
	lbIPs        = []string{"198.18.3.1", "198.18.3.2", "198.18.2.1", NodeIPv4, "2001:db8::3:1"}
	ranges       = []string{"198.18.4.0/24", "198.18.5.7/16", "0.0.0.0/0", "2001:db8:4::/48", " 198.18.6.0/24 ", "nope"}
	portNumbers  = []int32{80, 443, 30001, 30002}
	nodePorts    = []int32{30001, 30002, 30003, 0}
	hcPorts      = []int32{30003, 30004, 31000, 0}
	protocols    = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP, ""}
	portNames    = []string{"http", "dns", ""}
	endpointIPv4 = []string{"198.19.0.1", "198.19.0.2", "198.19.0.3", "198.19.0.4"}
	endpointIPv6 = []string{"2001:db8::9:1", "2001:db8::9:2", "2001:db8::9:3"}
	schedulers   = []string{"", "", "", "mh", "sh", "bogus"}
)

// Intn is a number in [0, n) from the walk's source, for the test's own
// choices (how many events per sync), so that one seed fixes all of them.
func (w *Walk) Intn(n int) int { return w.r.IntN(n) }
