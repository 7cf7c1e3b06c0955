package proxier

import (
	"net/netip"
	"slices"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
)

// Firewall-mark services (Service.FirewallMark): one virtual server per
// family of the service's VIPs, keyed by the mark; the VIPs bound and let
// in at the service's ports; recorded in the ownership ledger under a key
// no address service can have. validate_fwmark.go checks them.

// fwmarkService is svc's firewall-mark virtual server in family f.
// One-packet scheduling, which validation allows only with a UDP port,
// acts on the UDP packets the mark brings.
func fwmarkService(svc *Service, f Family) ipvs.Service {
	v := ipvs.Service{Family: f, FWMark: svc.FirewallMark, Scheduler: svc.Scheduler, SchedFlags: svc.SchedulerFlags, OnePacket: svc.OnePacket}
	scheduling(&v, svc)
	return v
}

// fwmarkVIPs are svc's VIPs of family f: cluster, external and
// load-balancer IPs.
func fwmarkVIPs(svc *Service, f Family) []netip.Addr {
	var out []netip.Addr
	for _, group := range [][]netip.Addr{svc.ClusterIPs, svc.ExternalIPs, svc.LoadBalancerIPs} {
		for _, a := range group {
			if inet.FamilyOf(a) == f {
				out = append(out, a)
			}
		}
	}
	return out
}

// contributeFWMark is contribute for a firewall-mark service. Its VIP:ports
// go in the ExternalIPLocal set, whatever the kind of VIP: the access guard
// lets them in and no rule marks them for masquerade, which would change
// the mark IPVS matches (it compares the packet's whole mark). Its local
// endpoints go in the LoopBack set at each port, for hairpin traffic.
func (sv *served) contributeFWMark(id string, svc *Service, fams map[Family]bool, out sink) {
	servers, rest := out.takesServers(), out.takesRest()
	for _, f := range []Family{IPv4, IPv6} {
		vips := fwmarkVIPs(svc, f)
		if len(vips) == 0 {
			continue
		}
		vsvc := fwmarkService(svc, f)
		if servers {
			vs := out.arena().server()
			vs.svc, vs.owner = vsvc, frontend{ServiceID: id, Kind: FirewallMark}
			// Port{}: no target port and no endpoint ports (validated),
			// so every destination has port 0.
			vs.dests = chooseEndpoints(svc, Port{}, Cluster, f, out.arena())
			out.server(vs)
		}
		if !rest || !fams[f] {
			continue
		}
		member := func(set iptables.SetName, m iptables.Member) { out.member(setKey{fam: f, set: set, m: m}) }
		member(iptables.VirtualServers, ledgerMember(vsvc.Key()))
		for _, a := range vips {
			if !sv.nodeAddrs[a] {
				out.vip(a)
			}
			for _, pt := range svc.Ports {
				member(iptables.ExternalIPLocal, iptables.AddrPort(a, pt.Protocol, uint16(pt.Port)))
			}
		}
		for i := range svc.Endpoints {
			e := &svc.Endpoints[i]
			if e.Local && inet.FamilyOf(e.Addr) == f {
				for _, pt := range svc.Ports {
					member(iptables.LoopBack, iptables.AddrPortAddr(e.Addr, pt.Protocol, uint16(pt.Port), e.Addr))
				}
			}
		}
	}
}

// The ledger (the VirtualServers set) holds address, protocol and port
// keys; a firewall-mark key is written as one with an address no virtual
// server of the proxier can have (validation refuses loopback and
// link-local VIPs, and node ports skip them): IPv4 127.m3.m2.m1 at tcp
// port m0+1 (m3..m0 the mark's bytes), IPv6 fe80::m3m2:m1m0 at tcp port 1.

// fwmarkLedgerMember is the ledger member of firewall-mark key k.
func fwmarkLedgerMember(k ipvs.ServiceKey) iptables.Member {
	m := k.FWMark
	if k.Family == IPv6 {
		var b [16]byte
		b[0], b[1] = 0xfe, 0x80
		b[12], b[13], b[14], b[15] = byte(m>>24), byte(m>>16), byte(m>>8), byte(m)
		return iptables.AddrPort(netip.AddrFrom16(b), TCP, 1)
	}
	return iptables.AddrPort(netip.AddrFrom4([4]byte{127, byte(m >> 24), byte(m >> 16), byte(m >> 8)}), TCP, uint16(m&0xff)+1)
}

// fwmarkLedgerKey is the firewall-mark key ledger member m stands for, if
// it stands for one.
func fwmarkLedgerKey(m iptables.Member) (ipvs.ServiceKey, bool) {
	var mark uint32
	switch a := m.Addr; {
	case m.Proto != TCP:
		return ipvs.ServiceKey{}, false
	case a.Is4() && a.IsLoopback() && m.Port >= 1 && m.Port <= 256:
		b := a.As4()
		mark = uint32(b[1])<<24 | uint32(b[2])<<16 | uint32(b[3])<<8 | uint32(m.Port-1)
	case a.Is6() && !a.Is4In6() && a.IsLinkLocalUnicast() && m.Port == 1:
		b := a.As16()
		mark = uint32(b[12])<<24 | uint32(b[13])<<16 | uint32(b[14])<<8 | uint32(b[15])
	}
	if mark == 0 {
		return ipvs.ServiceKey{}, false
	}
	return ipvs.ServiceKey{Family: inet.FamilyOf(m.Addr), FWMark: mark}, true
}

// fwmarkHolder returns the firewall-mark service, with its port, that
// serves VIP frontend k, if one does: such a frontend has no virtual
// server of its own. Its set member says whether to look.
func (sv *served) fwmarkHolder(k vipKey) (claim, bool) {
	f := inet.FamilyOf(k.addr)
	if r := sv.model.rules[f]; r != nil && !r.Has(iptables.ExternalIPLocal, iptables.AddrPort(k.addr, k.proto, uint16(k.port))) {
		return claim{}, false
	}
	for id, svc := range sv.entries {
		if svc.FirewallMark == 0 || !slices.Contains(fwmarkVIPs(svc, f), k.addr) {
			continue
		}
		if i := slices.IndexFunc(svc.Ports, func(p Port) bool { return p.Port == k.port && p.Protocol == k.proto }); i >= 0 {
			return claim{id: id, port: i}, true
		}
	}
	return claim{}, false
}
