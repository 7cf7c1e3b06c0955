package proxier

import (
	"net/netip"
	"slices"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
)

// virtualServer is one IPVS service the State asks for, with its
// destinations and the frontend it serves (for plans and errors).
type virtualServer struct {
	svc   ipvs.Service
	dests destSet
	owner frontend
}

// frontend says which service, port and kind of VIP a virtual server is for.
type frontend struct {
	ServiceID string
	PortName  string
	Kind      FrontendKind
}

// FrontendKind is the kind of address a virtual server listens on.
type FrontendKind uint8

// Frontend kinds.
const (
	ClusterIP FrontendKind = iota + 1
	ExternalIP
	LoadBalancerIP
	NodePort
	// FirewallMark is a firewall-mark virtual server (Service.FirewallMark):
	// the service's VIPs at its ports, marked.
	FirewallMark
)

func (k FrontendKind) String() string {
	switch k {
	case ClusterIP:
		return "ClusterIP"
	case ExternalIP:
		return "ExternalIP"
	case LoadBalancerIP:
		return "LoadBalancerIP"
	case NodePort:
		return "NodePort"
	case FirewallMark:
		return "FirewallMark"
	}
	return "FrontendKind(" + itoa(int(k)) + ")"
}

// desired is the kernel state a valid State asks for, computed without
// touching the kernel.
type desired struct {
	servers map[ipvs.ServiceKey]*virtualServer
	vips    map[netip.Addr]bool // addresses bound on the VIP link
	// rules per family; a nil entry means unknown (after a failure), so
	// the next sync applies the family's ruleset whatever it is.
	rules map[Family]*iptables.Ruleset
}

func virtualService(svc *Service, proto Protocol, addr netip.Addr, port int) ipvs.Service {
	v := ipvs.Service{
		Protocol:   proto,
		Addr:       addr,
		Port:       uint16(port),
		Scheduler:  svc.Scheduler,
		SchedFlags: svc.SchedulerFlags,
	}
	v.Family = inet.FamilyOf(addr)
	scheduling(&v, svc)
	v.OnePacket = svc.OnePacket && proto == UDP
	return v
}

// scheduling sets v's scheduler and persistence as svc asks; v.Family is
// set.
func scheduling(v *ipvs.Service, svc *Service) {
	if v.Scheduler == "" {
		v.Scheduler = "rr"
	}
	if a := svc.SessionAffinity; a != nil {
		v.Persistence.Timeout = a.Timeout
		if v.Persistence.Timeout == 0 {
			v.Persistence.Timeout = DefaultAffinityTimeout
		}
		v.Persistence.PrefixLen = persistencePrefix(a, v.Family)
	}
}

// chooseEndpoints picks a port's destinations of one family as kube-proxy
// does (one proxier per family): the Ready endpoints, or, when none is
// Ready, those Serving and Terminating. A Local
// policy keeps only this node's endpoints, chosen the same way among them;
// when there are none the VIP has no destinations (traffic to it is not sent
// elsewhere, which would lose the client's address that Local promises).
// Each destination has its endpoint's weight and thresholds (weight.go);
// those of endpoints not chosen are not here, and drain at weight 0
// (overlayDrains).
func chooseEndpoints(svc *Service, pt Port, policy TrafficPolicy, fam Family, a *arena) destSet {
	n, fallback := 0, 0 // the Ready ones; the Serving and Terminating ones
	for i := range svc.Endpoints {
		e := &svc.Endpoints[i]
		if inet.FamilyOf(e.Addr) != fam || (policy == Local && !e.Local) {
			continue
		}
		if e.Ready {
			n++
		} else if e.Serving && e.Terminating {
			fallback++
		}
	}
	ready := n > 0 // else kube-proxy's fallback
	if !ready {
		n = fallback
	}
	out := a.destinations(n)
	for i := range svc.Endpoints {
		e := &svc.Endpoints[i]
		if inet.FamilyOf(e.Addr) != fam || (policy == Local && !e.Local) {
			continue
		}
		if ready && !e.Ready || !ready && !(e.Serving && e.Terminating) {
			continue
		}
		d := ipvs.Destination{
			Addr:   e.Addr,
			Family: fam, // as the kernel reports it, so a read back compares equal
			Port:   uint16(endpointPort(e, pt)),
		}
		destForward(&d, svc)
		out = append(out, withEndpointKnobs(d, e)) // its weight (1 by default) and thresholds
	}
	return newDestSet(out)
}

func endpointPort(e *Endpoint, pt Port) int {
	if p, ok := e.Ports[pt.Name]; ok {
		return p
	}
	if pt.TargetPort != 0 {
		return pt.TargetPort
	}
	return pt.Port
}

// servesFamily says whether svc's node ports and health-check port are
// served in family f (the enabled families being checked apart): in its
// IPFamilies; without them, in the families of its cluster IPs (a
// single-stack Service has endpoints only in its own family, as in
// Kubernetes), or in every family when it has no cluster IP.
func servesFamily(svc *Service, f Family) bool {
	if len(svc.IPFamilies) > 0 {
		return slices.Contains(svc.IPFamilies, f)
	}
	if len(svc.ClusterIPs) == 0 {
		return true
	}
	return slices.ContainsFunc(svc.ClusterIPs, func(a netip.Addr) bool { return inet.FamilyOf(a) == f })
}

// nodePortAddrs are the node addresses NodePort virtual servers listen on:
// those of an enabled family that NodePortCIDRs select (all if none), but
// loopback and IPv6 link-local ones (see Node.Addresses), sorted.
func nodePortAddrs(n *Node, fams map[Family]bool) []netip.Addr {
	var out []netip.Addr
	for _, a := range n.Addresses {
		a = a.Unmap()
		if !fams[inet.FamilyOf(a)] || !NodePortCapable(a) {
			continue
		}
		if len(n.NodePortCIDRs) > 0 && !slices.ContainsFunc(n.NodePortCIDRs, func(p netip.Prefix) bool { return p.Contains(a) }) {
			continue
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// NodePortCapable reports whether a node address can carry node ports
// (Node.Addresses): any unicast address but loopback (127.0.0.0/8, ::1)
// and IPv6 link-local (fe80::/10). IPv4 link-local addresses
// (169.254.0.0/16) can, as in kube-proxy.
func NodePortCapable(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsValid() && !a.IsUnspecified() && !a.IsMulticast() && !a.IsLoopback() &&
		!(a.Is6() && a.IsLinkLocalUnicast())
}
