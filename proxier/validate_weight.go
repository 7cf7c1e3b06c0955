package proxier

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
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
		v.add(path(i)+".weight", e.Weight, "out of range 0-%d (0 means 1; Quiesced, or weight: 0 in a file, gives weight 0)", MaxWeight)
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

// destRef is where endpoint i sends one port's traffic: one destination.
type destRef struct {
	addr netip.Addr
	port int
	i    int
}

func compareDestRefs(x, y destRef) int {
	return cmp.Or(x.addr.Compare(y.addr), cmp.Compare(x.port, y.port), cmp.Compare(x.i, y.i))
}

// duplicateEndpoints refuses two endpoints of svc (at base) that would be
// one destination: the same address and, for some port of the service,
// the same endpoint port. The kernel holds one destination per address
// and port, so one of the two would be lost, with its weight and
// conditions; the Kubernetes converter merges the copies of an endpoint
// that several EndpointSlices list, as kube-proxy does, before they get
// here. Each port's destinations are gathered in the validator's scratch
// slice, so that a valid State of 100,000 endpoints allocates nothing.
func (v *validator) duplicateEndpoints(base string, svc *Service) {
	eps := svc.Endpoints
	if len(eps) < 2 {
		return
	}
	// Without endpoint ports, every port of the service pairs the same
	// endpoints: one port tells.
	perPort := false
	for i := range eps {
		perPort = perPort || len(eps[i].Ports) > 0
	}
	var dups []dup
	for _, pt := range svc.Ports {
		ds := v.dests[:0]
		for i := range eps {
			if eps[i].Addr.IsValid() { // an invalid one is refused as it is
				ds = append(ds, destRef{eps[i].Addr, endpointPort(&eps[i], pt), i})
			}
		}
		v.dests = ds
		for _, d := range pairs(ds) {
			if !slices.ContainsFunc(dups, func(x dup) bool { return x.later.i == d.later.i }) {
				dups = append(dups, dup{d.later, d.first, pt.Name})
			}
		}
		if !perPort {
			break
		}
	}
	slices.SortFunc(dups, func(x, y dup) int { return cmp.Compare(x.later.i, y.later.i) })
	for _, d := range dups {
		v.add(fmt.Sprintf("%s.endpoints[%d]", base, d.later.i), netip.AddrPortFrom(d.later.addr, uint16(d.later.port)),
			"is also endpoints[%d] for port %q: two endpoints would be one destination", d.first, d.portName)
	}
}

// dup is an endpoint refused (later), once: at its first port (portName)
// that makes it one destination with an earlier one, first.
type dup struct {
	later    destRef
	first    int
	portName string
}

// pairs returns, for each of ds (in order of i) that is the destination
// of an earlier one, it and the earliest; ds's order may change. A few are
// compared in turn, more sorted.
func pairs(ds []destRef) []dup {
	var out []dup
	if len(ds) <= 16 {
		for j := 1; j < len(ds); j++ {
			for i := range j {
				if ds[i].addr == ds[j].addr && ds[i].port == ds[j].port {
					out = append(out, dup{later: ds[j], first: ds[i].i})
					break
				}
			}
		}
		return out
	}
	slices.SortFunc(ds, compareDestRefs)
	run := 0 // where the run of ds[k]'s destination starts
	for k := 1; k < len(ds); k++ {
		if ds[k].addr != ds[run].addr || ds[k].port != ds[run].port {
			run = k
			continue
		}
		out = append(out, dup{later: ds[k], first: ds[run].i})
	}
	return out
}
