package proxier

import (
	"fmt"
	"net/netip"
)

// Validation of what an Endpoint asks of its destinations beside their
// address and port (weight.go), and of endpoints that would be one
// destination.

// endpointKnobs checks endpoint i's weight and thresholds; path(i) is the
// endpoint's path.
func (v *validator) endpointKnobs(path func(int) string, i int, e *Endpoint) {
	if e.Weight == 0 && e.UpperThreshold == 0 && e.LowerThreshold == 0 {
		return // the common case, and every Kubernetes endpoint
	}
	switch {
	case e.Weight < 0 || e.Weight > MaxWeight:
		v.add(path(i)+".weight", e.Weight, "out of range 0-%d (0 means 1; set quiesced for weight 0)", MaxWeight)
	case e.Quiesced && e.Weight != 0:
		v.add(path(i)+".weight", e.Weight, "is set on a quiesced endpoint, whose weight is 0")
	}
	upperOK := true
	for _, th := range []struct {
		name string
		n    int
	}{{"upperThreshold", e.UpperThreshold}, {"lowerThreshold", e.LowerThreshold}} {
		if th.n < 0 || th.n > MaxThreshold {
			v.add(path(i)+"."+th.name, th.n, "out of range 0-%d (0 means none)", MaxThreshold)
			upperOK = upperOK && th.name != "upperThreshold"
		}
	}
	switch lo, hi := e.LowerThreshold, e.UpperThreshold; {
	case !upperOK || lo <= 0 || lo > MaxThreshold:
	case hi == 0:
		v.add(path(i)+".lowerThreshold", lo, "is set without an upperThreshold (the kernel refuses a lower threshold above the upper one)")
	case lo > hi:
		v.add(path(i)+".lowerThreshold", lo, "is above the upperThreshold, %d (the kernel refuses it)", hi)
	}
}

// destKey is where an endpoint sends one port's traffic: one destination.
type destKey struct {
	addr netip.Addr
	port int
}

// duplicateEndpoints refuses two endpoints of svc (at base) that would be
// one destination: the same address and, for some port of the service,
// the same endpoint port. The kernel holds one destination per address
// and port, so one of the two would be lost, with its weight and
// conditions; the Kubernetes converter merges the copies of an endpoint
// that several EndpointSlices list, as kube-proxy does, before they get
// here.
func (v *validator) duplicateEndpoints(base string, svc *Service) {
	eps := svc.Endpoints
	if len(eps) < 2 {
		return
	}
	var seen map[destKey]int  // for many endpoints; a few are compared in turn
	var reported map[int]bool // the endpoints refused, each once
	for _, pt := range svc.Ports {
		if len(eps) > 8 {
			clear(seen)
			if seen == nil {
				seen = make(map[destKey]int, len(eps))
			}
		}
		for j := range eps {
			k := destKey{eps[j].Addr, endpointPort(&eps[j], pt)}
			if !k.addr.IsValid() {
				continue // refused as it is
			}
			first := -1
			if seen != nil {
				if i, ok := seen[k]; ok {
					first = i
				} else {
					seen[k] = j
				}
			} else {
				for i := range j {
					if eps[i].Addr == k.addr && endpointPort(&eps[i], pt) == k.port {
						first = i
						break
					}
				}
			}
			if first >= 0 && !reported[j] {
				if reported == nil {
					reported = map[int]bool{}
				}
				reported[j] = true
				v.add(fmt.Sprintf("%s.endpoints[%d]", base, j), netip.AddrPortFrom(k.addr, uint16(k.port)),
					"is also endpoints[%d] for port %q: two endpoints would be one destination", first, pt.Name)
			}
		}
	}
}
