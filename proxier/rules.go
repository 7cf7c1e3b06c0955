package proxier

import (
	"context"
	"net/netip"
	"slices"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
)

// Rules is what the Proxier needs of a netfilter back end for one family:
// *iptables.NFTables and *iptables.IPTables satisfy it.
type Rules interface {
	Apply(ctx context.Context, r *iptables.Ruleset) error
	Render(r *iptables.Ruleset) (string, error)
	// Cleanup removes every object the back end owns, and nothing else.
	Cleanup(ctx context.Context) error
	// Check reports how the owned objects differ from what was last
	// applied, changing nothing (Reconcile).
	Check(ctx context.Context) ([]iptables.Drift, error)
	// Repair rewrites every owned object from what was last applied.
	Repair(ctx context.Context) error
	// Owned reads the ownership ledger back from the kernel, changing
	// nothing: the members of the VirtualServers and IPVSIPs sets (nil if
	// the back end has written nothing). An error wrapping fs.ErrExist (an
	// *iptables.ForeignError) means objects of the back end's names exist
	// that it did not make.
	Owned(ctx context.Context) (*iptables.Ruleset, error)
}

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
				o.LocalDetector = iptables.LocalDetector{Mode: iptables.LocalCIDR, CIDR: p}
			}
		}
	case d.Interface != "":
		o.LocalDetector = iptables.LocalDetector{Mode: iptables.LocalInterface, Interface: d.Interface}
	case d.InterfacePrefix != "":
		o.LocalDetector = iptables.LocalDetector{Mode: iptables.LocalInterfacePrefix, Interface: d.InterfacePrefix}
	}
	return o
}

// rulesets fills one ruleset per enabled family from s, as kube-proxy's IPVS
// mode fills its ipsets (reference section 2); vips are the addresses bound
// on the VIP link. The VirtualServers set is the ownership ledger: the key
// of every virtual server in servers.
func rulesets(s *State, c *Config, vips map[netip.Addr]bool, servers map[ipvs.ServiceKey]*virtualServer) map[Family]*iptables.Ruleset {
	out := map[Family]*iptables.Ruleset{}
	for f := range enabledFamilies(c) {
		out[f] = iptables.NewRuleset(f, c.options(f))
	}
	// of is a's family's ruleset; Validate has refused addresses of a
	// disabled family, but a stray one is skipped rather than dereferenced.
	none := iptables.NewRuleset(iptables.IPv4, iptables.Options{})
	of := func(a netip.Addr) *iptables.Ruleset {
		if r := out[inet.FamilyOf(a)]; r != nil {
			return r
		}
		return none
	}
	nodeIPs := nodePortAddrs(&s.Node, enabledFamilies(c))
	for _, svc := range s.Services {
		for _, pt := range svc.Ports {
			proto, port := pt.Protocol.number(), uint16(pt.Port)
			for _, a := range svc.ClusterIPs {
				of(a).Add(iptables.ClusterIP, iptables.AddrPort(a, proto, port))
			}
			for _, a := range svc.ExternalIPs {
				set := iptables.ExternalIP
				if svc.ExternalTrafficPolicy == Local {
					set = iptables.ExternalIPLocal
				}
				of(a).Add(set, iptables.AddrPort(a, proto, port))
			}
			for _, a := range svc.LoadBalancerIPs {
				loadBalancer(of(a), &svc, a, proto, port, s.Node.Addresses)
			}
			if pt.NodePort != 0 {
				nodePort(out, &svc, pt.Protocol, uint16(pt.NodePort), nodeIPs)
			}
			for i := range svc.Endpoints {
				e := &svc.Endpoints[i]
				if e.Local {
					ep := uint16(endpointPort(e, pt))
					of(e.Addr).Add(iptables.LoopBack, iptables.AddrPortAddr(e.Addr, proto, ep, e.Addr))
				}
			}
		}
		if hc := svc.HealthCheckNodePort; hc != 0 {
			for f, r := range out {
				if hasFamily(nodeIPs, f) && servesFamily(&svc, f) {
					r.Add(iptables.HealthCheckNodePort, iptables.Port(uint16(hc)))
				}
			}
		}
	}
	for a := range vips {
		of(a).Add(iptables.IPVSIPs, iptables.Addr(a))
	}
	for k := range servers {
		of(k.Addr).Add(iptables.VirtualServers, ledgerMember(k))
	}
	return out
}

// ledgerMember is k as a member of the VirtualServers set (the two
// packages number protocols as the kernel does).
func ledgerMember(k ipvs.ServiceKey) iptables.Member {
	return iptables.AddrPort(k.Addr, k.Protocol, k.Port)
}

func loadBalancer(r *iptables.Ruleset, svc *Service, a netip.Addr, proto iptables.Protocol, port uint16, node []netip.Addr) {
	m := iptables.AddrPort(a, proto, port)
	r.Add(iptables.LoadBalancer, m)
	if svc.ExternalTrafficPolicy == Local {
		r.Add(iptables.LoadBalancerLocal, m)
	}
	if len(svc.LoadBalancerSourceRanges) == 0 {
		return
	}
	r.Add(iptables.LoadBalancerFW, m)
	nodeAdmitted := false
	for _, p := range svc.LoadBalancerSourceRanges {
		if inet.FamilyOf(p.Addr()) != inet.FamilyOf(a) {
			continue
		}
		r.Add(iptables.LoadBalancerSourceCIDR, iptables.AddrPortNet(a, proto, port, p))
		if slices.ContainsFunc(node, p.Contains) {
			nodeAdmitted = true
		}
	}
	if nodeAdmitted {
		// The node reaching its own VIP uses the VIP as source.
		r.Add(iptables.LoadBalancerSourceIP, iptables.AddrPortAddr(a, proto, port, a))
	} else {
		r.Add(iptables.LBNoNodeAccess, m)
	}
}

func nodePort(out map[Family]*iptables.Ruleset, svc *Service, p Protocol, port uint16, nodeIPs []netip.Addr) {
	local := svc.ExternalTrafficPolicy == Local
	for f, r := range out {
		if !hasFamily(nodeIPs, f) || !servesFamily(svc, f) {
			continue // kube-proxy fills node-port sets only when there are node IPs
		}
		switch p {
		case TCP, UDP:
			set, localSet := iptables.NodePortTCP, iptables.NodePortLocalTCP
			if p == UDP {
				set, localSet = iptables.NodePortUDP, iptables.NodePortLocalUDP
			}
			r.Add(set, iptables.Port(port))
			if local {
				r.Add(localSet, iptables.Port(port))
			}
		case SCTP:
			for _, a := range nodeIPs {
				if inet.FamilyOf(a) != f {
					continue
				}
				m := iptables.AddrPort(a, iptables.SCTP, port)
				r.Add(iptables.NodePortSCTP, m)
				if local {
					r.Add(iptables.NodePortLocalSCTP, m)
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
