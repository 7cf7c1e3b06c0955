package proxier

import (
	"fmt"

	"github.com/ipvskit/ipvskit/ipvs"
)

// fwmark checks a firewall-mark service (Service.FirewallMark), under the
// path base: what a mark-keyed virtual server at port 0 cannot honour is
// refused, with the reason.
func (v *validator) fwmark(id, base string, svc *Service) {
	m := svc.FirewallMark
	if m == 0 {
		return
	}
	mark := fmt.Sprintf("%#x", m)
	if m&v.masqMark != 0 {
		v.add(base+".firewallMark", mark, "has the Proxier's masquerade bit %#x (Config.MasqueradeBit): IPVS matches the packet's whole mark", v.masqMark)
	}
	why := "a firewall-mark service"
	if svc.HealthCheckNodePort != 0 {
		v.add(base+".healthCheckNodePort", svc.HealthCheckNodePort, "is set on %s, which serves no node ports", why)
	}
	if svc.ExternalTrafficPolicy == Local || svc.InternalTrafficPolicy == Local {
		v.add(base+".externalTrafficPolicy", "Local", "on %s: its one virtual server per family serves every VIP with every endpoint", why)
	}
	if len(svc.LoadBalancerSourceRanges) > 0 {
		v.add(base+".loadBalancerSourceRanges", len(svc.LoadBalancerSourceRanges), "are set on %s: they are not enforced there", why)
	}
	for i, pt := range svc.Ports {
		p := fmt.Sprintf("%s.ports[%d]", base, i)
		if pt.NodePort != 0 {
			v.add(p+".nodePort", pt.NodePort, "is set on %s, which serves no node ports", why)
		}
		if pt.TargetPort != 0 && pt.TargetPort != pt.Port {
			v.add(p+".targetPort", pt.TargetPort, "differs from the port %d: %s keeps each packet's port", pt.Port, why)
		}
	}
	for i, e := range svc.Endpoints {
		if len(e.Ports) > 0 {
			v.add(fmt.Sprintf("%s.endpoints[%d].ports", base, i), len(e.Ports), "are set on an endpoint of %s, which keeps each packet's port", why)
		}
	}
	n := 0
	for _, f := range []Family{IPv4, IPv6} {
		if len(fwmarkVIPs(svc, f)) == 0 {
			continue
		}
		n++
		k := ipvs.ServiceKey{Family: f, FWMark: m}
		if first, dup := v.markHolder(k); dup {
			v.add(base+".firewallMark", mark, "is already the %v mark of %s", f, first)
		} else {
			if v.marks == nil {
				v.marks = map[ipvs.ServiceKey]string{}
			}
			v.marks[k] = fmt.Sprintf("services[%q]", id)
		}
	}
	if n == 0 {
		v.add(base+".firewallMark", mark, "is set on a service without a VIP (clusterIPs, externalIPs, loadBalancerIPs) for the marked traffic")
	}
}

// markHolder returns the path of the service that has firewall-mark key
// k already: one validated before, or one that stays.
func (v *validator) markHolder(k ipvs.ServiceKey) (string, bool) {
	if p, ok := v.marks[k]; ok {
		return p, true
	}
	if v.served == nil {
		return "", false
	}
	vs := v.served.model.servers[k]
	if vs == nil {
		return "", false
	}
	if _, ch := v.changing[vs.owner.ServiceID]; ch {
		return "", false
	}
	return fmt.Sprintf("services[%q]", vs.owner.ServiceID), true
}
