package proxier

import (
	"net/netip"
	"slices"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
)

// Rules is a netfilter back end for one family: *iptables.NFTablesBackend,
// *iptables.IPTablesBackend and *iptablestest.Fake satisfy it. It is an
// alias of iptables.Interface, the one definition of that method set, kept under this
// name for Deps and its users. Of it, the Proxier calls Apply, Cleanup,
// Check (Reconcile), Repair, Owned (Sync's start and Cleanup) and LastStats
// (what an Apply sent, for the Result); Render only renders text, ApplyFull
// is never called, and Close is called by Open's Proxier only, on the back
// ends Open made. A type written for the older, smaller Rules needs
// ApplyFull, LastStats and Close added.
type Rules = iptables.Interface

// defaultMasqueradeBit is kube-proxy's: mark 0x4000.
const defaultMasqueradeBit = 14

// options maps the Config onto the rules' options for family f.
func (c *Config) options(f Family) iptables.Options {
	bit := defaultMasqueradeBit
	if c.MasqueradeBit != nil {
		bit = *c.MasqueradeBit
	}
	o := iptables.Options{MasqueradeAll: c.MasqueradeAll, MasqueradeMark: 1 << bit}
	d := c.LocalDetector
	switch {
	case len(d.ClusterCIDRs) > 0:
		for _, p := range d.ClusterCIDRs {
			if inet.FamilyOf(p.Addr()) == f {
				o.LocalMatch = iptables.LocalMatch{Mode: iptables.LocalCIDR, CIDR: p}
			}
		}
	case d.Interface != "":
		o.LocalMatch = iptables.LocalMatch{Mode: iptables.LocalInterface, Interface: d.Interface}
	case d.InterfacePrefix != "":
		o.LocalMatch = iptables.LocalMatch{Mode: iptables.LocalInterfacePrefix, Interface: d.InterfacePrefix}
	}
	return o
}

// memberFunc receives a set member of family f.
type memberFunc func(f Family, set iptables.SetName, m iptables.Member)

// portMembers gives member the set members port pt of svc adds, as
// kube-proxy's IPVS mode fills its ipsets (reference section 2), except
// the ledger's (VirtualServers and IPVSIPs, which follow the virtual
// servers and VIPs): nodeIPs are the node-port addresses, node all of the
// node's addresses.
//
// A service whose replies do not come back through the node (DirectRoute,
// Tunnel: see unNATed) is never marked for masquerade: its cluster and
// external IPs go to ExternalIPLocal, the set of VIP:ports the rules of
// both back ends accept unmarked (before the node-port rule, which marks
// any local address at a node port) and let through the VIP access
// filter; its load-balancer IPs go to LoadBalancerLocal (whose rule
// returns before the load-balancer chain's mark) and ExternalIPLocal too
// (the source ranges still apply); and its endpoints to no LoopBack
// member (the packet keeps the VIP as its destination, so the hairpin
// rule could not match it). It has no node ports (validation).
func portMembers(svc *Service, pt Port, nodeIPs, node []netip.Addr, fams map[Family]bool, member memberFunc) {
	proto, port := pt.Protocol, uint16(pt.Port)
	natted := unNATed(svc)
	clusterSet, externalSet := iptables.ClusterIPSet, iptables.ExternalIPSet
	if !natted {
		clusterSet = iptables.ExternalIPLocal
	}
	if !natted || svc.ExternalTrafficPolicy == Local {
		externalSet = iptables.ExternalIPLocal
	}
	for _, a := range svc.ClusterIPs {
		member(inet.FamilyOf(a), clusterSet, iptables.AddrPort(a, proto, port))
	}
	for _, a := range svc.ExternalIPs {
		member(inet.FamilyOf(a), externalSet, iptables.AddrPort(a, proto, port))
	}
	for _, a := range svc.LoadBalancerIPs {
		loadBalancer(svc, a, proto, port, node, member)
	}
	if pt.NodePort != 0 {
		nodePort(svc, pt.Protocol, uint16(pt.NodePort), nodeIPs, fams, member)
	}
	for i := range svc.Endpoints {
		e := &svc.Endpoints[i]
		if e.Local && natted {
			ep := uint16(endpointPort(e, pt))
			member(inet.FamilyOf(e.Addr), iptables.LoopBack, iptables.AddrPortAddr(e.Addr, proto, ep, e.Addr))
		}
	}
}

// ledgerMember is k as a member of the VirtualServers set (the two
// packages number protocols as the kernel does).
func ledgerMember(k ipvs.ServiceKey) iptables.Member {
	if k.FWMark != 0 {
		return fwmarkLedgerMember(k)
	}
	return iptables.AddrPort(k.Addr, k.Protocol, k.Port)
}

func loadBalancer(svc *Service, a netip.Addr, proto iptables.Protocol, port uint16, node []netip.Addr, member memberFunc) {
	f, m := inet.FamilyOf(a), iptables.AddrPort(a, proto, port)
	member(f, iptables.LoadBalancer, m)
	if svc.ExternalTrafficPolicy == Local || !unNATed(svc) {
		member(f, iptables.LoadBalancerLocal, m)
	}
	if !unNATed(svc) {
		// Accepted before the node-port rule, which would mark it at a
		// port that is also a node port (an external IP's rules).
		member(f, iptables.ExternalIPLocal, m)
	}
	if len(svc.LoadBalancerSourceRanges) == 0 {
		return
	}
	member(f, iptables.LoadBalancerFW, m)
	nodeAdmitted := false
	for _, p := range svc.LoadBalancerSourceRanges {
		if inet.FamilyOf(p.Addr()) != f {
			continue
		}
		member(f, iptables.LoadBalancerSourceCIDR, iptables.AddrPortNet(a, proto, port, p))
		if slices.ContainsFunc(node, p.Contains) {
			nodeAdmitted = true
		}
	}
	if nodeAdmitted {
		// The node reaching its own VIP uses the VIP as source.
		member(f, iptables.LoadBalancerSourceIP, iptables.AddrPortAddr(a, proto, port, a))
	} else {
		member(f, iptables.LBNoNodeAccess, m)
	}
}

func nodePort(svc *Service, p Protocol, port uint16, nodeIPs []netip.Addr, fams map[Family]bool, member memberFunc) {
	local := svc.ExternalTrafficPolicy == Local
	for _, f := range []Family{IPv4, IPv6} {
		if !fams[f] || !hasFamily(nodeIPs, f) || !servesFamily(svc, f) {
			continue // kube-proxy fills node-port sets only when there are node IPs
		}
		switch p {
		case TCP, UDP:
			set, localSet := iptables.NodePortTCP, iptables.NodePortLocalTCP
			if p == UDP {
				set, localSet = iptables.NodePortUDP, iptables.NodePortLocalUDP
			}
			member(f, set, iptables.Port(port))
			if local {
				member(f, localSet, iptables.Port(port))
			}
		case SCTP:
			for _, a := range nodeIPs {
				if inet.FamilyOf(a) != f {
					continue
				}
				m := iptables.AddrPort(a, iptables.SCTP, port)
				member(f, iptables.NodePortSCTP, m)
				if local {
					member(f, iptables.NodePortLocalSCTP, m)
				}
			}
		}
	}
}

func hasFamily(addrs []netip.Addr, f Family) bool {
	return slices.ContainsFunc(addrs, func(a netip.Addr) bool { return inet.FamilyOf(a) == f })
}

// unionRuleset is next's options with the members of both prev and next:
// what the rules must hold while additions are applied and before removals.
func unionRuleset(prev, next *iptables.Ruleset) *iptables.Ruleset {
	if prev == nil {
		return next
	}
	u := next.Clone()
	for _, s := range iptables.Sets() {
		u.Add(s, prev.Members(s)...)
	}
	return u
}
