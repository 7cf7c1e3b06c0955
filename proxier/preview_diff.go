package proxier

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/ipvskit/ipvskit/ipvs"
)

// The take-over preview's changes, object by object, from what the kernel
// holds (have) to what the Sync applies (want).

// previewServer returns the changes to the virtual server at k, from h (nil:
// none) to w (nil: deleted), with its destinations.
func previewServer(k ipvs.ServiceKey, h, w *virtualServer) []TakeoverChange {
	vs := "virtual server " + k.String()
	if h == nil {
		c := change(w.owner, vs, fmt.Sprintf("added (%s)", destCount(len(w.dests))))
		return append([]TakeoverChange{c}, destChanges(k, w.owner, nil, w.dests)...)
	}
	if w == nil {
		return []TakeoverChange{change(h.owner, vs, fmt.Sprintf("deleted (with %s)", destCount(len(h.dests))))}
	}
	var out []TakeoverChange
	if d := serviceFieldChanges(h.svc, w.svc); d != "" {
		out = append(out, change(w.owner, vs, d))
	}
	return append(out, destChanges(k, w.owner, h.dests, w.dests)...)
}

func destCount(n int) string {
	if n == 1 {
		return "1 destination"
	}
	return fmt.Sprintf("%d destinations", n)
}

// change is a change to obj, which serves owner (none if owner is zero).
func change(owner frontend, obj, what string) TakeoverChange {
	c := TakeoverChange{ServiceID: owner.ServiceID, Object: obj, Change: what}
	if owner.Kind != 0 {
		c.Frontend = strings.TrimSpace(owner.Kind.String() + " " + owner.PortName)
	}
	return c
}

// destChanges are the changes to the destinations of the virtual server at
// k, from have to want.
func destChanges(k ipvs.ServiceKey, owner frontend, have, want destSet) []TakeoverChange {
	var out []TakeoverChange
	obj := func(d ipvs.Destination) string { return fmt.Sprintf("destination %v of %v", d.Key(), k) }
	for _, wd := range want {
		hd, ok := have.get(wd.Key())
		switch {
		case !ok:
			out = append(out, change(owner, obj(wd), fmt.Sprintf("added (weight %d)", wd.Weight)))
		case hd != wd:
			what := destFieldChanges(hd, wd)
			if wd.Weight == 0 && hd.Weight != 0 {
				what += " (no new connections)"
			}
			out = append(out, change(owner, obj(wd), what))
		}
	}
	for _, hd := range have {
		if !want.has(hd.Key()) {
			out = append(out, change(owner, obj(hd), "deleted"))
		}
	}
	return out
}

// serviceFieldChanges names the fields of a virtual server that differ
// from h to w ("" if none).
func serviceFieldChanges(h, w ipvs.Service) string {
	if f := serviceFieldDiffs(h, w); len(f) > 0 || h == w {
		return f.change()
	}
	return fmt.Sprintf("%+v -> %+v", h, w) // a field serviceFieldDiffs does not name
}

// destFieldChanges names the fields of a destination that differ from h
// to w.
func destFieldChanges(h, w ipvs.Destination) string {
	if f := destinationFieldDiffs(h, w); len(f) > 0 {
		return f.change()
	}
	return fmt.Sprintf("%+v -> %+v", h, w)
}

// previewVIPs returns the plan's VIPs bound and unbound, each under every
// Service that has a virtual server on it (none: no Service owns it).
// With VIPLocalRoutes, a VIP bound as an address now and held as a route
// after (oldVIPs) is one change, of form.
func previewVIPs(mode VIPMode, plan *Plan, oldVIPs []netip.Addr, want *desired) []TakeoverChange {
	owners := map[netip.Addr][]frontend{}
	for _, k := range sortedKeys(want.servers) {
		o := want.servers[k].owner
		if !slices.ContainsFunc(owners[k.Addr], func(x frontend) bool { return x.ServiceID == o.ServiceID }) {
			owners[k.Addr] = append(owners[k.Addr], frontend{ServiceID: o.ServiceID})
		}
	}
	var out []TakeoverChange
	each := func(a netip.Addr, what string) {
		os := owners[a]
		if len(os) == 0 {
			os = []frontend{{}}
		}
		for _, o := range os {
			out = append(out, change(o, "VIP "+a.String(), what))
		}
	}
	bound, unbound, moved, oldGone := "bound", "unbound", "held by an address instead of a local route", "local route removed"
	if mode == VIPLocalRoutes {
		bound, unbound, moved, oldGone = "local route added", "local route removed", "held by a local route instead of an address", "unbound"
	}
	for _, a := range plan.Bind {
		if slices.Contains(oldVIPs, a) {
			each(a, moved)
		} else {
			each(a, bound)
		}
	}
	for _, a := range plan.Unbind {
		each(a, unbound)
	}
	for _, a := range oldVIPs {
		if !slices.Contains(plan.Bind, a) {
			each(a, oldGone)
		}
	}
	return out
}
