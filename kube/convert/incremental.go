package convert

import (
	"cmp"
	"maps"
	"slices"

	"github.com/ipvskit/ipvskit/proxier"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Converter is Convert's incremental form, for a caller that learns of the
// cluster one object at a time (an informer's handler): it keeps the
// Services and EndpointSlices it was given, and Changes converts only the
// Services changed since the last call (a Service changes with its object
// and with the slices that name it), plus the Services whose frontends
// (VIP and port, node port, health-check port) they contend for. Its State
// and Skipped always equal Convert's of the same objects and Node; a
// change of the Node is a new Converter.
//
// A Converter is not safe for concurrent use.
type Converter struct {
	c         converter
	node      proxier.Node
	nodeSkips []Skipped
	claims    claimIndex

	svcs map[string]*corev1.Service // by namespace/name
	// sliceOf is the Service key each slice (by namespace/name) is
	// indexed under; badSlices the report of each slice that names none.
	sliceOf   map[string]string
	badSlices map[string][]Skipped

	svcSkips map[string][]Skipped       // by Service key: its conversion's reports
	ports    map[string]*portService    // by port ID, before the claims
	portsOf  map[string][]string        // Service key -> its port IDs
	out      map[string]proxier.Service // by port ID: the State's services
	outSkips map[string][]Skipped       // by port ID: claims, topology

	dirty   map[string]bool // Service keys to convert again
	changed map[string]bool // port IDs whose service may differ
	skips   skipCounts
}

// NewConverter returns a Converter for node n, holding no objects.
func NewConverter(n Node) *Converter {
	x := &Converter{
		c:    converter{fams: families(n.Families), node: n, slices: &sliceIndex{byService: map[string][]*discoveryv1.EndpointSlice{}}},
		svcs: map[string]*corev1.Service{}, sliceOf: map[string]string{}, badSlices: map[string][]Skipped{},
		svcSkips: map[string][]Skipped{}, ports: map[string]*portService{}, portsOf: map[string][]string{},
		out: map[string]proxier.Service{}, outSkips: map[string][]Skipped{},
		dirty: map[string]bool{}, changed: map[string]bool{}, claims: newClaimIndex(),
		skips: skipCounts{n: map[Skipped]int{}},
	}
	x.node = x.c.stateNode()
	x.nodeSkips = x.c.take()
	x.claims.nodeAddrs = nodeAddrSet(x.node)
	x.skips.set(nil, x.nodeSkips)
	return x
}

// Node is the node the Converter converts for.
func (x *Converter) Node() Node { return x.c.node }

// SetService adds or replaces a Service (by namespace and name); a nil
// Service is ignored.
func (x *Converter) SetService(s *corev1.Service) {
	if s == nil {
		return
	}
	k := s.Namespace + "/" + s.Name
	x.svcs[k] = s
	x.dirty[k] = true
}

// DeleteService removes the Service namespace/name, if held.
func (x *Converter) DeleteService(namespace, name string) {
	k := namespace + "/" + name
	if _, ok := x.svcs[k]; ok {
		delete(x.svcs, k)
		x.dirty[k] = true
	}
}

// SetSlice adds or replaces an EndpointSlice (by namespace and name); a
// nil slice is ignored.
func (x *Converter) SetSlice(s *discoveryv1.EndpointSlice) {
	if s == nil {
		return
	}
	name := s.Namespace + "/" + s.Name
	x.DeleteSlice(s.Namespace, s.Name)
	if bad, ok := unindexed(s); ok {
		x.skips.set(nil, []Skipped{bad})
		x.badSlices[name] = []Skipped{bad}
		return
	}
	k := s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]
	list := x.c.slices.byService[k]
	i, _ := slices.BinarySearchFunc(list, s.Name, func(e *discoveryv1.EndpointSlice, n string) int { return cmp.Compare(e.Name, n) })
	x.c.slices.byService[k] = slices.Insert(list, i, s)
	x.sliceOf[name] = k
	x.dirty[k] = true
}

// DeleteSlice removes the EndpointSlice namespace/name, if held.
func (x *Converter) DeleteSlice(namespace, name string) {
	n := namespace + "/" + name
	if old, ok := x.badSlices[n]; ok {
		x.skips.set(old, nil)
		delete(x.badSlices, n)
		return
	}
	k, ok := x.sliceOf[n]
	if !ok {
		return
	}
	delete(x.sliceOf, n)
	list := slices.DeleteFunc(x.c.slices.byService[k], func(e *discoveryv1.EndpointSlice) bool {
		return e.Namespace == namespace && e.Name == name
	})
	if len(list) == 0 {
		delete(x.c.slices.byService, k)
	} else {
		x.c.slices.byService[k] = list
	}
	x.dirty[k] = true
}

// Changes converts what changed since the last call and returns the
// services of the State that changed, by ID (nil for one that is gone:
// proxier.Proxier.Update's argument), and the reports of Skipped that are
// new (not reported before the call).
func (x *Converter) Changes() (map[string]*proxier.Service, []Skipped) {
	var seeds []string
	for _, k := range slices.Sorted(maps.Keys(x.dirty)) {
		seeds = append(seeds, x.convertService(k)...)
	}
	clear(x.dirty)
	x.reclaim(x.claims.component(seeds, x.ports))
	changes := make(map[string]*proxier.Service, len(x.changed))
	for id := range x.changed {
		if s, ok := x.out[id]; ok {
			changes[id] = &s
		} else {
			changes[id] = nil
		}
	}
	clear(x.changed)
	return changes, x.skips.news()
}

// convertService converts the Service k again (or drops it) and returns
// the port IDs it had and has: the seeds of the claims to settle again.
func (x *Converter) convertService(k string) []string {
	old := x.portsOf[k]
	for _, id := range old {
		x.claims.remove(id, x.ports[id])
		delete(x.ports, id)
		x.changed[id] = true
	}
	delete(x.portsOf, k)
	var ports []*portService
	if s, ok := x.svcs[k]; ok {
		ports = x.c.service(s)
	}
	x.skips.set(x.svcSkips[k], x.c.skipped)
	if len(x.c.skipped) > 0 {
		x.svcSkips[k] = x.c.take()
	} else {
		delete(x.svcSkips, k)
	}
	ids := old
	for _, p := range ports {
		x.ports[p.id] = p
		x.portsOf[k] = append(x.portsOf[k], p.id)
		x.claims.add(p.id, p)
		x.changed[p.id] = true
		ids = append(ids, p.id)
	}
	return ids
}

// reclaim settles the claims of the ports ids (sorted; the IDs of a
// component, see claimIndex) again, as Convert does for all of them, and
// makes their services.
func (x *Converter) reclaim(ids []string) {
	var ports []*portService
	for _, id := range ids {
		x.changed[id] = true
		x.skips.set(x.outSkips[id], nil)
		delete(x.outSkips, id)
		delete(x.out, id)
		if p, ok := x.ports[id]; ok {
			ports = append(ports, p.clone())
		}
	}
	x.c.claim(ports, x.node)
	for _, p := range ports {
		if !p.hasFrontend() {
			x.c.skip(p.id, "has no virtual IP, node port or health-check port left")
		} else {
			x.c.topology(p)
			x.out[p.id] = p.build()
		}
	}
	byID := map[string][]Skipped{}
	for _, s := range x.c.take() {
		byID[s.Service] = append(byID[s.Service], s)
	}
	for id, ss := range byID {
		x.outSkips[id] = ss
		x.skips.set(nil, ss)
	}
}

// State is the State of the objects held, as Convert makes it. Its
// services are shared with the Converter's own: the caller must not
// change their slices or maps.
func (x *Converter) State() proxier.State {
	return proxier.State{Services: maps.Clone(x.out), Node: x.node}
}

// StateNode is the Node of State.
func (x *Converter) StateNode() proxier.Node { return x.node }

// Skipped is what Convert would report of the objects held, sorted.
func (x *Converter) Skipped() []Skipped {
	out := slices.Clone(x.nodeSkips)
	for _, m := range []map[string][]Skipped{x.badSlices, x.svcSkips, x.outSkips} {
		for _, ss := range m {
			out = append(out, ss...)
		}
	}
	sortSkipped(out)
	return slices.Compact(out)
}

func sortSkipped(s []Skipped) {
	slices.SortFunc(s, func(a, b Skipped) int {
		return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Reason, b.Reason))
	})
}

// take returns what c skipped and forgets it.
func (c *converter) take() []Skipped {
	s := c.skipped
	c.skipped = nil
	return s
}

// clone is p with its own copies of what the claims and topology change.
func (p *portService) clone() *portService {
	q := *p
	q.svc.ClusterIPs = slices.Clone(p.svc.ClusterIPs)
	q.svc.ExternalIPs = slices.Clone(p.svc.ExternalIPs)
	q.svc.LoadBalancerIPs = slices.Clone(p.svc.LoadBalancerIPs)
	q.svc.Ports = slices.Clone(p.svc.Ports)
	q.eps = slices.Clone(p.eps)
	return &q
}

// skipCounts counts the reports held, to tell which are new.
type skipCounts struct {
	n      map[Skipped]int
	before map[Skipped]int // each report touched since news, with its count then
}

// set replaces the reports old with now.
func (s *skipCounts) set(old, now []Skipped) {
	for _, k := range old {
		s.touch(k)
		if s.n[k]--; s.n[k] <= 0 {
			delete(s.n, k)
		}
	}
	for _, k := range now {
		s.touch(k)
		s.n[k]++
	}
}

func (s *skipCounts) touch(k Skipped) {
	if s.before == nil {
		s.before = map[Skipped]int{}
	}
	if _, ok := s.before[k]; !ok {
		s.before[k] = s.n[k]
	}
}

// news are the reports held now that were not at the last call, sorted.
func (s *skipCounts) news() []Skipped {
	var out []Skipped
	for k, n := range s.before {
		if n == 0 && s.n[k] > 0 {
			out = append(out, k)
		}
	}
	s.before = nil
	sortSkipped(out)
	return out
}

// Reports says whether Skipped would report s now.
func (x *Converter) Reports(s Skipped) bool { return x.skips.n[s] > 0 }
