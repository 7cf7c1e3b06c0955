package proxier

import (
	"slices"

	"github.com/ipvskit/ipvskit/ipvs"
)

// destSet is a virtual server's destinations, one per key, sorted by key
// (compareDestKeys). It replaces a map: a virtual server has a few
// destinations, and at 10,000s of virtual servers a map each (about 1.4 KB
// for 10) was most of what a first sync's plan allocated and kept live.
// Sorted, it ranges in the order a plan sends requests in, with no sort, and
// two sets are equal when their slices are. Virtual servers may share one
// (see destChoices): nothing changes a set in place but a clone of it.
type destSet []ipvs.Destination

// destChoices are the destinations chosen for one port of a service, per
// traffic policy and family, so that its virtual servers (a VIP each, a node
// port per node address) that would choose the same share one destSet.
type destChoices struct {
	n  int
	of [4]struct { // Cluster and Local, IPv4 and IPv6
		policy TrafficPolicy
		fam    Family
		ds     destSet
	}
}

// get returns the destinations chooseEndpoints picks for svc's port pt under
// policy in family fam, choosing them once.
func (c *destChoices) get(svc *Service, pt Port, policy TrafficPolicy, fam Family, a *arena) destSet {
	for _, x := range c.of[:c.n] {
		if x.policy == policy && x.fam == fam {
			return x.ds
		}
	}
	ds := chooseEndpoints(svc, pt, policy, fam, a)
	if c.n < len(c.of) {
		c.of[c.n].policy, c.of[c.n].fam, c.of[c.n].ds = policy, fam, ds
		c.n++
	}
	return ds
}

// newDestSet sorts ds by key, in place, and keeps the last of each key (as
// assigning them in turn to a map would).
func newDestSet(ds []ipvs.Destination) destSet {
	slices.SortStableFunc(ds, func(x, y ipvs.Destination) int { return compareDestKeys(x.Key(), y.Key()) })
	out := ds[:0]
	for _, d := range ds {
		if n := len(out); n > 0 && out[n-1].Key() == d.Key() {
			out[n-1] = d
			continue
		}
		out = append(out, d)
	}
	return destSet(out)
}

// index returns where k is in s, or where it would go, and whether it is
// there.
func (s destSet) index(k ipvs.DestinationKey) (int, bool) {
	return slices.BinarySearchFunc(s, k, func(d ipvs.Destination, k ipvs.DestinationKey) int {
		return compareDestKeys(d.Key(), k)
	})
}

// get returns the destination of key k, if s has it.
func (s destSet) get(k ipvs.DestinationKey) (ipvs.Destination, bool) {
	if i, ok := s.index(k); ok {
		return s[i], true
	}
	return ipvs.Destination{}, false
}

// has says whether s has a destination of key k.
func (s destSet) has(k ipvs.DestinationKey) bool {
	_, ok := s.index(k)
	return ok
}

// set adds d to s, or replaces the destination of its key.
func (s *destSet) set(d ipvs.Destination) {
	i, ok := s.index(d.Key())
	if ok {
		(*s)[i] = d
		return
	}
	*s = slices.Insert(*s, i, d)
}

// remove takes the destination of key k out of s, if there.
func (s *destSet) remove(k ipvs.DestinationKey) {
	if i, ok := s.index(k); ok {
		*s = slices.Delete(*s, i, i+1)
	}
}

// clone returns a copy of s that can change apart from it.
func (s destSet) clone() destSet { return slices.Clone(s) }

// equal says whether s and o hold the same destinations.
func (s destSet) equal(o destSet) bool { return slices.Equal(s, o) }
