package proxier

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
)

// served is the State the Proxier serves, kept service by service with the
// indexes that let one service change without looking at the others, and
// the kernel state all of them ask for together (model). A change of one
// service costs what that service adds and takes away, whatever the number
// of services: what a service adds is computed again from its copy when it
// changes, rather than kept.
//
// Most set members belong to one frontend, which validation lets only one
// service hold; a VIP and a local endpoint (LoopBack) can be shared, and
// those are counted: the IPVSIPs set holds the VIPs that vipRefs counts.
type served struct {
	node      Node                // a copy of the State's
	nodeIPs   []netip.Addr        // the node-port addresses (nodePortAddrs), none excluded
	nodeAddrs map[netip.Addr]bool // every node address (validation, VIPs left unbound)
	entries   map[string]*Service // copies of the services served
	// nodePorts are the node ports and health-check ports (port,
	// protocol) the services hold, with their holder; a VIP frontend's
	// holder is its virtual server's owner.
	nodePorts  map[vipKey]claim
	vipRefs    map[netip.Addr]int // services binding each VIP
	memberRefs map[setKey]int     // services adding each shared set member
	// model is what the kernel must hold for all the services: its
	// rulesets are changed in place (so a back end that applied one sees
	// what changed since in O(changes)), by apply for an incremental plan.
	model *desired
}

// shared says whether members of set s may come from several services.
func shared(s iptables.SetName) bool { return s == iptables.LoopBack }

// vipMember is VIP a as a member of the IPVSIPs set.
func vipMember(a netip.Addr) setKey {
	return setKey{fam: inet.FamilyOf(a), set: iptables.IPVSIPs, m: iptables.Addr(a)}
}

// setKey is one member of one family's set.
type setKey struct {
	fam Family
	set iptables.SetName
	m   iptables.Member
}

// claim names a service's use of a frontend or node port, for the error
// that refuses a second use: the path is formatted only then.
type claim struct {
	id   string
	port int  // index in Ports; -1 for the health-check node port
	node bool // the port's node port rather than its VIP frontends
}

func (c claim) path() string {
	base := fmt.Sprintf("services[%q]", c.id)
	switch {
	case c.port < 0:
		return base + ".healthCheckNodePort"
	case c.node:
		return fmt.Sprintf("%s.ports[%d].nodePort", base, c.port)
	}
	return fmt.Sprintf("%s.ports[%d]", base, c.port)
}

// newServed returns an empty served State for node under c.
func newServed(node *Node, c *Config) *served {
	fams := enabledFamilies(c)
	sv := &served{
		node:    cloneNode(node),
		nodeIPs: unexcluded(nodePortAddrs(node, fams), c.ExcludeCIDRs), nodeAddrs: map[netip.Addr]bool{},
		entries: map[string]*Service{}, nodePorts: map[vipKey]claim{},
		vipRefs: map[netip.Addr]int{}, memberRefs: map[setKey]int{},
		model: &desired{servers: map[ipvs.ServiceKey]*virtualServer{}, vips: map[netip.Addr]bool{},
			rules: map[Family]*iptables.Ruleset{}},
	}
	for _, a := range node.Addresses {
		if a.IsValid() {
			sv.nodeAddrs[a.Unmap()] = true
		}
	}
	for f := range fams {
		sv.model.rules[f] = iptables.NewRuleset(f, c.options(f))
	}
	return sv
}

// build returns the served State for s, which must be valid under c.
func build(s *State, c *Config) *served {
	sv := newServed(&s.Node, c)
	sv.reserve(s)
	fams := enabledFamilies(c)
	// Two at once, which write apart (see builder): the virtual servers
	// from the copies the served State keeps, the rest from s itself, which
	// is only read. They take about the same time.
	var wg sync.WaitGroup
	wg.Go(func() {
		rest := &builder{sv: sv}
		for id, svc := range s.Services {
			sv.contribute(id, &svc, fams, rest)
		}
	})
	servers := &builder{sv: sv, servers: true, mem: &arena{}}
	for id, svc := range s.Services {
		cp := servers.mem.service()
		*cp = cloneServiceIn(&svc, servers.mem)
		sv.entries[id] = cp
		sv.contribute(id, cp, fams, servers)
	}
	wg.Wait()
	return sv
}

// reserve makes room in sv (new) for what the services of s add, so that
// a build does not grow its maps and sets step by step: the virtual
// servers and VIPs of their cluster, external and load-balancer IPs, with
// their members of the VirtualServers, IPVSIPs and ClusterIP sets (node
// ports and the other sets are few, or grow as they must).
func (sv *served) reserve(s *State) {
	var servers, vips, clusterIPs [2]int // per family: IPv4, IPv6
	for _, svc := range s.Services {
		n := len(svc.Ports)
		for _, group := range [][]netip.Addr{svc.ClusterIPs, svc.ExternalIPs, svc.LoadBalancerIPs} {
			for _, a := range group {
				i := famIndex(a)
				servers[i] += n
				vips[i]++
			}
		}
		for _, a := range svc.ClusterIPs {
			clusterIPs[famIndex(a)] += n
		}
	}
	sv.entries = make(map[string]*Service, len(s.Services))
	sv.model.servers = make(map[ipvs.ServiceKey]*virtualServer, servers[0]+servers[1])
	sv.model.vips = make(map[netip.Addr]bool, vips[0]+vips[1])
	sv.vipRefs = make(map[netip.Addr]int, vips[0]+vips[1])
	for i, f := range []Family{IPv4, IPv6} {
		if r := sv.model.rules[f]; r != nil {
			r.Grow(iptables.VirtualServers, servers[i])
			r.Grow(iptables.IPVSIPs, vips[i])
			r.Grow(iptables.ClusterIPSet, clusterIPs[i])
		}
	}
}

// famIndex is 1 for an IPv6 address, else 0.
func famIndex(a netip.Addr) int {
	if a.Is6() && !a.Is4In6() {
		return 1
	}
	return 0
}

// compute returns what s (valid under c) asks the kernel for.
func compute(s *State, c *Config) *desired { return build(s, c).model }

// validate checks the services changes sets against each other and against
// the services that stay, as State.Validate would check the State they
// make, and returns a *ValidationError listing every problem.
func (sv *served) validate(changes map[string]*Service, c *Config) error {
	v := &validator{families: enabledFamilies(c), served: sv, changing: changes, exclude: c.ExcludeCIDRs, masqMark: c.options(IPv4).MasqueradeMark}
	vips, nodePorts := map[vipKey]claim{}, map[vipKey]claim{}
	for _, id := range slices.Sorted(maps.Keys(changes)) {
		if svc := changes[id]; svc != nil {
			v.service(id, svc, sv.nodeAddrs, vips, nodePorts)
		}
	}
	return v.err()
}

// heldBy returns the path of the service that holds k (a node port if
// node), unless that service is one of those changing.
func (sv *served) heldBy(k vipKey, node bool, changing map[string]*Service) (string, bool) {
	var c claim
	if node {
		var ok bool
		if c, ok = sv.nodePorts[k]; !ok {
			return "", false
		}
	} else {
		key := ipvs.ServiceKey{Family: inet.FamilyOf(k.addr), Protocol: k.proto, Addr: k.addr, Port: uint16(k.port)}
		vs := sv.model.servers[key]
		if vs == nil {
			var ok bool
			if c, ok = sv.fwmarkHolder(k); !ok {
				return "", false
			}
		} else if vs.owner.Kind == NodePort || sv.entries[vs.owner.ServiceID] == nil {
			return "", false
		} else {
			c = claim{id: vs.owner.ServiceID, port: slices.IndexFunc(sv.entries[vs.owner.ServiceID].Ports,
				func(p Port) bool { return p.Name == vs.owner.PortName })}
		}
	}
	if _, ch := changing[c.id]; ch {
		return "", false
	}
	return c.path(), true
}

// contribute gives to out what svc (valid) adds to the kernel state. It
// reads only svc, the node and the config.
func (sv *served) contribute(id string, svc *Service, fams map[Family]bool, out sink) {
	if svc.FirewallMark != 0 {
		sv.contributeFWMark(id, svc, fams, out)
		return
	}
	servers, rest := out.takesServers(), out.takesRest()
	member := func(f Family, set iptables.SetName, m iptables.Member) {
		if rest && fams[f] {
			out.member(setKey{fam: f, set: set, m: m})
		}
	}
	for i, pt := range svc.Ports {
		var chosen destChoices // the port's virtual servers share them
		add := func(addr netip.Addr, port int, kind FrontendKind, policy TrafficPolicy, bind bool) {
			vsvc := virtualService(svc, pt.Protocol, addr, port)
			if servers {
				vs := out.arena().server()
				vs.svc, vs.owner = vsvc, frontend{ServiceID: id, PortName: pt.Name, Kind: kind}
				vs.dests = chosen.get(svc, pt, policy, inet.FamilyOf(addr), out.arena())
				out.server(vs)
			}
			if !rest {
				return
			}
			member(inet.FamilyOf(addr), iptables.VirtualServers, ledgerMember(vsvc.Key()))
			if bind {
				out.vip(addr) // and IPVSIPs, while some service binds it
			}
		}
		if pt.NodePort != 0 && rest {
			out.nodePort(vipKey{port: pt.NodePort, proto: pt.Protocol}, claim{id: id, port: i, node: true})
		}
		for _, a := range svc.ClusterIPs {
			add(a, pt.Port, ClusterIP, svc.InternalTrafficPolicy, true)
		}
		// An external or load-balancer IP that is a node address is
		// local already: its virtual server serves it, unbound.
		for _, a := range svc.ExternalIPs {
			add(a, pt.Port, ExternalIP, svc.ExternalTrafficPolicy, !sv.nodeAddrs[a])
		}
		for _, a := range svc.LoadBalancerIPs {
			add(a, pt.Port, LoadBalancerIP, svc.ExternalTrafficPolicy, !sv.nodeAddrs[a])
		}
		if pt.NodePort != 0 {
			for _, a := range sv.nodeIPs {
				if servesFamily(svc, inet.FamilyOf(a)) {
					add(a, pt.NodePort, NodePort, svc.ExternalTrafficPolicy, false)
				}
			}
		}
		if rest {
			portMembers(svc, pt, sv.nodeIPs, sv.node.Addresses, fams, member)
		}
	}
	if hc := svc.HealthCheckNodePort; hc != 0 && rest {
		out.nodePort(vipKey{port: hc, proto: TCP}, claim{id: id, port: -1})
		for f := range fams {
			// Whatever the node's addresses: kube-proxy skips the port
			// when its node has none, a quirk not kept.
			if servesFamily(svc, f) {
				member(f, iptables.HealthCheckNodePort, iptables.Port(uint16(hc)))
			}
		}
	}
}
