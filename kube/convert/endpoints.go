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

// endpoint is a proxier.Endpoint with what topology needs: its port (the
// Ports map holds it too) and its hints.
type endpoint struct {
	proxier.Endpoint
	port         int
	zones, nodes []string // hints; nil when none
}

// sliceIndex holds the EndpointSlices by the Service they name, each
// Service's in name order.
type sliceIndex struct {
	byService map[string][]*discoveryv1.EndpointSlice
	skipped   []Skipped
}

// indexSlices groups slices by "namespace/service". As in kube-proxy, a
// slice without the service-name label, a name or a namespace is ignored;
// of two slices of the same name the later one in the input stands.
func indexSlices(in []*discoveryv1.EndpointSlice) *sliceIndex {
	x := &sliceIndex{byService: map[string][]*discoveryv1.EndpointSlice{}}
	byName := map[string]*discoveryv1.EndpointSlice{}
	for _, s := range in {
		if s == nil {
			continue
		}
		name := s.Namespace + "/" + s.Name
		if bad, ok := unindexed(s); ok {
			x.skipped = append(x.skipped, bad)
			continue
		}
		if prev, dup := byName[name]; dup {
			x.skipped = append(x.skipped, Skipped{Service: s.Namespace + "/" + prev.Labels[discoveryv1.LabelServiceName],
				Reason: fmt.Sprintf("EndpointSlice %s is in the input twice: the later object is used", name)})
		}
		byName[name] = s
	}
	for _, s := range byName {
		k := s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]
		x.byService[k] = append(x.byService[k], s)
	}
	for _, ss := range x.byService {
		slices.SortFunc(ss, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
	}
	return x
}

// unindexed is the report of a slice kube-proxy ignores, if it does: one
// without the service-name label, a name or a namespace.
func unindexed(s *discoveryv1.EndpointSlice) (Skipped, bool) {
	name := s.Namespace + "/" + s.Name
	svc := s.Labels[discoveryv1.LabelServiceName]
	switch {
	case svc == "":
		return Skipped{Reason: fmt.Sprintf("EndpointSlice %s has no %s label: ignored", name, discoveryv1.LabelServiceName)}, true
	case s.Namespace == "" || s.Name == "":
		return Skipped{Service: s.Namespace + "/" + svc, Reason: fmt.Sprintf("EndpointSlice %q has no namespace or no name: ignored", name)}, true
	}
	return Skipped{}, false
}

func addressFamily(t discoveryv1.AddressType) (proxier.Family, bool) {
	switch t {
	case discoveryv1.AddressTypeIPv4:
		return proxier.IPv4, true
	case discoveryv1.AddressTypeIPv6:
		return proxier.IPv6, true
	}
	return 0, false // FQDN: kube-proxy ignores it
}

type endpointKey struct {
	addr netip.Addr
	port int
}

// endpoints are the endpoints of the Service key's port (name, protocol) in
// families fams, as kube-proxy's EndpointSliceCache makes them, sorted by
// address and port.
func (c *converter) endpoints(key, portName string, proto corev1.Protocol, fams []proxier.Family) []endpoint {
	set := map[endpointKey]endpoint{}
	for _, sl := range c.slices.byService[key] {
		f, ok := addressFamily(sl.AddressType)
		if !ok || !slices.Contains(fams, f) {
			continue
		}
		for _, sp := range sl.Ports {
			if sp.Name == nil {
				c.skip(key, fmt.Sprintf("EndpointSlice %s lists a port without a name: ignored", sl.Name))
				continue
			}
			if *sp.Name != portName || slicePortProtocol(sp) != proto {
				continue
			}
			if sp.Port == nil || *sp.Port < 1 || *sp.Port > 65535 {
				c.skip(key, fmt.Sprintf("EndpointSlice %s lists port %q without a port number in 1-65535: ignored", sl.Name, portName))
				continue
			}
			c.addEndpoints(set, key, sl, f, portName, int(*sp.Port))
		}
	}
	out := make([]endpoint, 0, len(set))
	for _, e := range set {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b endpoint) int {
		return cmp.Or(a.Addr.Compare(b.Addr), cmp.Compare(a.port, b.port))
	})
	return out
}

func slicePortProtocol(p discoveryv1.EndpointPort) corev1.Protocol {
	if p.Protocol == nil || *p.Protocol == "" {
		return corev1.ProtocolTCP // the API server's default
	}
	return *p.Protocol
}

// addEndpoints adds the endpoints of slice sl (family f) for one port to set,
// with kube-proxy's rule for an address and port already there: a
// non-terminating endpoint replaces it, a terminating one does not.
func (c *converter) addEndpoints(set map[endpointKey]endpoint, key string, sl *discoveryv1.EndpointSlice, f proxier.Family, portName string, port int) {
	for i := range sl.Endpoints {
		e := &sl.Endpoints[i]
		if len(e.Addresses) == 0 {
			c.skip(key, fmt.Sprintf("EndpointSlice %s endpoints[%d] has no address: ignored", sl.Name, i))
			continue
		}
		a, ok := parseIP(e.Addresses[0])
		switch {
		case !ok:
			c.skip(key, fmt.Sprintf("EndpointSlice %s endpoint address %q does not parse: ignored", sl.Name, e.Addresses[0]))
			continue
		case familyOf(a) != f:
			c.skip(key, fmt.Sprintf("EndpointSlice %s of addressType %s lists %v: ignored", sl.Name, sl.AddressType, a))
			continue
		case a.IsUnspecified() || a.IsMulticast():
			c.skip(key, fmt.Sprintf("EndpointSlice %s endpoint address %v is not unicast: ignored", sl.Name, a))
			continue
		}
		cond := e.Conditions
		terminating := cond.Terminating != nil && *cond.Terminating
		k := endpointKey{a, port}
		if _, exists := set[k]; exists && terminating {
			continue
		}
		ep := endpoint{
			Endpoint: proxier.Endpoint{
				Addr:        a,
				Ports:       map[string]int{portName: port},
				Ready:       cond.Ready == nil || *cond.Ready,
				Serving:     cond.Serving == nil || *cond.Serving,
				Terminating: terminating,
				Local:       c.node.Name != "" && e.NodeName != nil && *e.NodeName == c.node.Name,
			},
			port: port,
		}
		if h := e.Hints; h != nil {
			for _, z := range h.ForZones {
				ep.zones = append(ep.zones, z.Name)
			}
			for _, n := range h.ForNodes {
				ep.nodes = append(ep.nodes, n.Name)
			}
		}
		set[k] = ep
	}
}
