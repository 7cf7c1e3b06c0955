package proxier

import (
	"fmt"
	"net/netip"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
)

// setOwners finds the Service a set member is for, through the virtual
// servers of want (else of have) it names.
type setOwners struct {
	servers map[ipvs.ServiceKey]frontend // by frontend: Addr, Proto, Port
	dests   map[iptables.Member]frontend // by endpoint: Addr, Proto, Port
	ports   map[iptables.Member]frontend // node ports: Proto, Port
	addrs   map[netip.Addr]frontend      // VIPs
}

func newSetOwners(have, want *desired) *setOwners {
	o := &setOwners{servers: map[ipvs.ServiceKey]frontend{}, dests: map[iptables.Member]frontend{},
		ports: map[iptables.Member]frontend{}, addrs: map[netip.Addr]frontend{}}
	for _, d := range []*desired{have, want} { // want's last: it wins
		for k, vs := range d.servers {
			if vs.owner.ServiceID == "" {
				continue
			}
			o.servers[k] = vs.owner
			o.addrs[k.Addr] = frontend{ServiceID: vs.owner.ServiceID}
			if vs.owner.Kind == NodePort {
				o.ports[iptables.Member{Proto: k.Protocol, Port: k.Port}] = vs.owner
			}
			for _, dst := range vs.dests {
				o.dests[iptables.Member{Addr: dst.Addr, Proto: k.Protocol, Port: dst.Port}] = vs.owner
			}
		}
	}
	return o
}

// of returns the frontend member m of set s is for (zero if none).
func (o *setOwners) of(s iptables.SetName, m iptables.Member) frontend {
	switch s.Shape() {
	case iptables.ShapeAddr:
		return o.addrs[m.Addr]
	case iptables.ShapePort:
		if s == iptables.HealthCheckNodePort {
			return frontend{} // no virtual server names it
		}
		return o.ports[iptables.Member{Proto: nodePortProto(s), Port: m.Port}]
	}
	if s == iptables.LoopBack {
		return o.dests[iptables.Member{Addr: m.Addr, Proto: m.Proto, Port: m.Port}]
	}
	k := ipvs.ServiceKey{Family: inet.FamilyOf(m.Addr), Protocol: m.Proto, Addr: m.Addr, Port: m.Port}
	return o.servers[k]
}

// nodePortProto is the protocol of a node-port set's ports.
func nodePortProto(s iptables.SetName) ipvs.Protocol {
	switch s {
	case iptables.NodePortUDP, iptables.NodePortLocalUDP:
		return ipvs.UDP
	}
	return ipvs.TCP
}

// previewSets returns the set members the Sync adds to and deletes from
// kube-proxy's ipsets of family f (have, as read) to make them want's. The
// ledger (VirtualServers), which kube-proxy does not have, is not a change
// of what traffic gets: Rewrites names it.
func previewSets(f Family, have, want *iptables.Ruleset, owners *setOwners) []TakeoverChange {
	var out []TakeoverChange
	for _, s := range iptables.Sets() {
		name := s.IPSetName(f)
		if name == "" || s == iptables.VirtualServers {
			continue
		}
		obj := func(m iptables.Member) string { return fmt.Sprintf("ipset %s member %v", name, m) }
		for _, m := range want.Members(s) {
			if !have.Has(s, m) {
				out = append(out, change(owners.of(s, m), obj(m), "added"))
			}
		}
		for _, m := range have.Members(s) {
			if !want.Has(s, m) {
				out = append(out, change(owners.of(s, m), obj(m), "deleted"))
			}
		}
	}
	return out
}
