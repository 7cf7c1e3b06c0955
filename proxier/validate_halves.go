package proxier

import (
	"net/netip"
	"sync"
)

// halvesMin is the number of services from which a whole State's services
// are validated in two halves at once: below it, the goroutine costs more
// than it saves.
const halvesMin = 2048

// servicesInHalves validates the services ids (sorted) of s in two halves at
// once, each half on its own: a first sync of 10,000s of services spends a
// sixth of its user space validating, on one core while the other waits.
// It reports true when that settled it: neither half found a problem and
// the halves cannot have clashed (no frontend, node port or firewall mark
// used by both, no frontend on a node address). Otherwise it reports false and leaves v
// as it was, and the caller validates the services one by one, which lists
// every problem in the order and with the words of a serial run: an invalid
// State is rare and small, a valid one common and large.
func (v *validator) servicesInHalves(s *State, ids []string, nodeAddrs map[netip.Addr]bool) bool {
	type half struct {
		v               validator
		vips, nodePorts map[vipKey]claim
	}
	mid := len(ids) / 2
	var halves [2]half
	run := func(h *half, ids []string) {
		h.v = validator{families: v.families, exclude: v.exclude, masqMark: v.masqMark}
		h.vips, h.nodePorts = make(map[vipKey]claim, len(ids)), map[vipKey]claim{}
		for _, id := range ids {
			svc := s.Services[id]
			h.v.service(id, &svc, nodeAddrs, h.vips, h.nodePorts)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { run(&halves[1], ids[mid:]) })
	run(&halves[0], ids[:mid])
	wg.Wait()
	if len(halves[0].v.problems) > 0 || len(halves[1].v.problems) > 0 {
		return false
	}
	a, b := &halves[0], &halves[1]
	for k := range b.vips {
		if _, ok := a.vips[k]; ok || nodeAddrs[k.addr] {
			return false
		}
	}
	for k := range a.vips {
		if nodeAddrs[k.addr] {
			return false
		}
	}
	for k := range b.nodePorts {
		if _, ok := a.nodePorts[k]; ok {
			return false
		}
	}
	for k := range b.v.marks {
		if _, ok := a.v.marks[k]; ok {
			return false
		}
	}
	return true
}
