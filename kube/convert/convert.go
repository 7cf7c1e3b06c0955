package convert

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"

	"github.com/ipvskit/ipvskit/proxier"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Node is what kube-proxy knows about the node it runs on.
type Node struct {
	// Name is the node's name; an endpoint whose nodeName equals it is
	// Local. Empty makes no endpoint local.
	Name string
	// Addresses are the node's IPs (State.Node.Addresses): node ports are
	// served on them; an external or load-balancer IP equal to one is
	// served without being bound on the VIP link, and a cluster IP equal to
	// one is left out.
	Addresses []netip.Addr
	// NodePortCIDRs are kube-proxy's --nodeport-addresses; empty means all
	// addresses. As in kube-proxy, a family with no CIDR here serves node
	// ports on all its addresses.
	NodePortCIDRs []netip.Prefix
	// Families are the IP families proxied (kube-proxy runs one proxier
	// per family); empty means IPv4 only. Pass the same list as
	// proxier.Config.Families.
	Families []proxier.Family
	// Zone is the node's topology.kubernetes.io/zone label, which zone
	// hints are matched against. Empty (no label) matches only a hint for
	// the zone named "", as in kube-proxy.
	Zone string
}

// Input is everything Convert reads: the Services and EndpointSlices of the
// cluster (or of the namespaces served) and the node's facts.
type Input struct {
	Services []*corev1.Service
	Slices   []*discoveryv1.EndpointSlice
	Node     Node
}

// Skipped says why a Service (or one of its ports) makes no virtual server,
// or what part of one Convert left out, and why.
type Skipped struct {
	// Service is "namespace/name", or the ID of a port's proxier.Service
	// ("namespace/name:port"); empty for an EndpointSlice that names no
	// Service and for the Node's own facts.
	Service string
	Reason  string
}

func (s Skipped) String() string {
	if s.Service == "" {
		return s.Reason
	}
	return s.Service + ": " + s.Reason
}

// Convert maps in onto the State kube-proxy's IPVS mode would program (see
// the package documentation), with what it skipped, sorted. The State is
// valid for proxier.Config{Families: in.Node.Families}.
func Convert(in Input) (proxier.State, []Skipped) {
	c := &converter{
		fams:   families(in.Node.Families),
		node:   in.Node,
		slices: indexSlices(in.Slices),
	}
	c.skipped = c.slices.skipped
	node := c.stateNode()
	var ports []*portService
	for _, svc := range uniqueServices(in.Services, c.skip) {
		ports = append(ports, c.service(svc)...)
	}
	state := proxier.State{
		Services: make(map[string]proxier.Service, len(ports)),
		Node:     node,
	}
	slices.SortFunc(ports, func(a, b *portService) int { return cmp.Compare(a.id, b.id) })
	c.claim(ports, state.Node)
	for _, p := range ports {
		if !p.hasFrontend() {
			c.skip(p.id, "has no virtual IP, node port or health-check port left")
			continue
		}
		c.topology(p)
		state.Services[p.id] = p.build()
	}
	slices.SortFunc(c.skipped, func(a, b Skipped) int {
		return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Reason, b.Reason))
	})
	return state, slices.Compact(c.skipped)
}

// converter carries what every Service's conversion reads, and what it
// skipped.
type converter struct {
	fams    []proxier.Family
	node    Node
	slices  *sliceIndex
	skipped []Skipped
	// nodePortFams are the families the State serves node ports in.
	nodePortFams map[proxier.Family]bool
}

func (c *converter) skip(svc, reason string) {
	c.skipped = append(c.skipped, Skipped{Service: svc, Reason: reason})
}

// families are the proxied families in order (IPv4 first), without repeats
// or values that are not families.
func families(in []proxier.Family) []proxier.Family {
	var out []proxier.Family
	for _, f := range []proxier.Family{proxier.IPv4, proxier.IPv6} {
		if slices.Contains(in, f) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		out = []proxier.Family{proxier.IPv4}
	}
	return out
}

// stateNode is the State's node: its addresses as given, and the node-port
// CIDRs with host bits cleared and, if there are any, the zero prefix of each
// proxied family that has none (kube-proxy's per-family default).
func (c *converter) stateNode() proxier.Node {
	var n proxier.Node
	for _, a := range c.node.Addresses {
		if !a.IsValid() || a.IsUnspecified() || a.IsMulticast() {
			c.skip("", fmt.Sprintf("node address %v is not a unicast address: left out", a))
			continue
		}
		n.Addresses = append(n.Addresses, a)
	}
	for _, p := range c.node.NodePortCIDRs {
		if !p.IsValid() {
			c.skip("", fmt.Sprintf("node-port CIDR %v is not a prefix: left out", p))
			continue
		}
		n.NodePortCIDRs = append(n.NodePortCIDRs, p.Masked())
	}
	if len(n.NodePortCIDRs) > 0 {
		for _, f := range c.fams {
			if !slices.ContainsFunc(n.NodePortCIDRs, func(p netip.Prefix) bool { return familyOf(p.Addr()) == f }) {
				n.NodePortCIDRs = append(n.NodePortCIDRs, zeroPrefix(f))
			}
		}
	}
	// The families in which the proxier serves node ports (its
	// nodePortAddrs rule): those of node addresses that the CIDRs select.
	c.nodePortFams = map[proxier.Family]bool{}
	for _, a := range n.Addresses {
		a = a.Unmap()
		if !proxier.NodePortCapable(a) {
			continue
		}
		if len(n.NodePortCIDRs) == 0 || slices.ContainsFunc(n.NodePortCIDRs, func(p netip.Prefix) bool { return p.Contains(a) }) {
			c.nodePortFams[familyOf(a)] = true
		}
	}
	return n
}

// uniqueServices are the Services by namespace and name, in that order; of
// two with the same name the later one in the input stands, as a watch
// would leave it.
func uniqueServices(in []*corev1.Service, skip func(svc, reason string)) []*corev1.Service {
	byName := map[string]int{}
	var out []*corev1.Service
	for _, s := range in {
		if s == nil {
			continue
		}
		k := s.Namespace + "/" + s.Name
		if i, dup := byName[k]; dup {
			skip(k, "is in the input twice: the later object is used")
			out[i] = s
			continue
		}
		byName[k] = len(out)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *corev1.Service) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}
