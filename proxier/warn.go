package proxier

import (
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"

	"github.com/ipvskit/ipvskit/inet"
)

// Warning is a part of a valid State that the proxier does not use, so it
// has no effect on the kernel: an endpoint of a family the service has no
// frontend in (or is not served in, by its IPFamilies), a node port with no node address to serve it on. Unlike a
// Problem it does not stop a Sync. Result.Warnings and SyncEvent.Warnings
// list them.
type Warning struct {
	Path  string // e.g. services["web"].endpoints[1].addr
	Value string // the unused value, as text
	Msg   string // why it is unused
}

func (w Warning) String() string {
	return Problem{Path: w.Path, Value: w.Value, Msg: w.Msg}.String()
}

// serviceWarnings returns what of svc (valid) is unused: the endpoints of
// a family the service has no frontend in, and the node ports served in
// none (or not all) of its families for want of a node address. nodeIPs
// are the node-port addresses (nodePortAddrs); fams the enabled families.
func serviceWarnings(id string, svc *Service, nodeIPs []netip.Addr, fams map[Family]bool) []Warning {
	var out []Warning
	// Paths are formatted only for a warning: most services have none.
	base := func() string { return fmt.Sprintf("services[%q]", id) }
	served := map[Family]bool{} // the families with a frontend
	for _, group := range [][]netip.Addr{svc.ClusterIPs, svc.ExternalIPs, svc.LoadBalancerIPs} {
		for _, a := range group {
			served[inet.FamilyOf(a)] = true
		}
	}
	for i, pt := range svc.Ports {
		if pt.NodePort == 0 {
			continue
		}
		for _, f := range []Family{IPv4, IPv6} {
			if !fams[f] || !servesFamily(svc, f) {
				continue
			}
			if hasFamily(nodeIPs, f) {
				served[f] = true
				continue
			}
			out = append(out, Warning{Path: fmt.Sprintf("%s.ports[%d].nodePort", base(), i), Value: itoa(pt.NodePort),
				Msg: fmt.Sprintf("is not served over %v: the node has no %v address (of Node.Addresses, in NodePortCIDRs if set, outside Config.ExcludeCIDRs)", f, f)})
		}
	}
	if len(served) == 0 {
		if len(svc.Endpoints) > 0 {
			out = append(out, Warning{Path: base() + ".endpoints", Msg: "are unused: the service has no frontend (no cluster, external or load-balancer IP, and no node port served)"})
		}
		return out
	}
	for i := range svc.Endpoints {
		a := svc.Endpoints[i].Addr
		f := inet.FamilyOf(a)
		switch {
		case served[f]:
		case !servesFamily(svc, f) && len(svc.IPFamilies) > 0:
			out = append(out, Warning{Path: fmt.Sprintf("%s.endpoints[%d].addr", base(), i), Value: a.String(),
				Msg: fmt.Sprintf("is unused: the service is not served in %v (ipFamilies)", f)})
		default:
			out = append(out, Warning{Path: fmt.Sprintf("%s.endpoints[%d].addr", base(), i), Value: a.String(),
				Msg: fmt.Sprintf("is unused: the service has no %v frontend (cluster, external or load-balancer IP, or node port)", f)})
		}
	}
	return out
}

// warnings are the warnings of the services served, by service ID, and
// the last ones logged.
type warnings map[string][]Warning

// set replaces id's warnings (none removes them) and logs through l, at
// Warn level, each that id did not have: an unchanged service's warnings
// are logged once, not on every Sync.
func (ws warnings) set(id string, nu []Warning, l *slog.Logger) {
	old := ws[id]
	if len(nu) == 0 {
		delete(ws, id)
	} else {
		ws[id] = nu
	}
	if l == nil {
		return
	}
	for _, w := range nu {
		if !slices.Contains(old, w) {
			l.Warn("proxier: unused", "path", w.Path, "value", w.Value, "reason", w.Msg)
		}
	}
}

// of returns the warnings of the services ids names (all, if ids is nil),
// by ID.
func (ws warnings) of(ids map[string]*Service) []Warning {
	keys := slices.Sorted(maps.Keys(ids))
	if ids == nil {
		keys = slices.Sorted(maps.Keys(ws))
	}
	var out []Warning
	for _, id := range keys {
		out = append(out, ws[id]...)
	}
	return out
}

// warnAll replaces the warnings with those of the services served (a whole
// State just built), logging the new ones.
func (p *Proxier) warnAll() {
	old, fams := p.serving.warns, enabledFamilies(&p.cfg)
	p.serving.warns = warnings{}
	// Found in any order, set (and logged) in the order of their IDs:
	// only the few services with warnings are sorted.
	found := map[string][]Warning{}
	for id, svc := range p.serving.sv.entries {
		if ws := serviceWarnings(id, svc, p.serving.sv.nodeIPs, fams); len(ws) > 0 {
			found[id] = ws
		}
	}
	for _, id := range slices.Sorted(maps.Keys(found)) {
		p.serving.warns[id] = old[id]
		p.serving.warns.set(id, found[id], p.cfg.Logger)
	}
}

// warnChanged replaces the warnings of the services changes names (valid),
// logging the new ones.
func (p *Proxier) warnChanged(changes map[string]*Service) {
	fams := enabledFamilies(&p.cfg)
	if p.serving.warns == nil {
		p.serving.warns = warnings{}
	}
	for _, id := range slices.Sorted(maps.Keys(changes)) {
		if svc := changes[id]; svc != nil {
			p.serving.warns.set(id, serviceWarnings(id, svc, p.serving.sv.nodeIPs, fams), p.cfg.Logger)
		} else {
			delete(p.serving.warns, id)
		}
	}
}
