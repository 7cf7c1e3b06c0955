package proxier

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"

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
	nodeIPs   []netip.Addr        // the node-port addresses (nodePortAddrs)
	nodeAddrs map[netip.Addr]bool // every node address (validation)
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
		nodeIPs: nodePortAddrs(node, fams), nodeAddrs: map[netip.Addr]bool{},
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
	sv.entries = make(map[string]*Service, len(s.Services))
	sv.model.servers = make(map[ipvs.ServiceKey]*virtualServer, len(s.Services))
	fams := enabledFamilies(c)
	b := builder{sv}
	for id := range s.Services {
		svc := s.Services[id]
		cp := cloneService(&svc)
		sv.entries[id] = &cp
		sv.contribute(id, &cp, fams, b)
	}
	return sv
}

// compute returns what s (valid under c) asks the kernel for.
func compute(s *State, c *Config) *desired { return build(s, c).model }

// validate checks the services changes sets against each other and against
// the services that stay, as State.Validate would check the State they
// make, and returns a *ValidationError listing every problem.
func (sv *served) validate(changes map[string]*Service, c *Config) error {
	v := &validator{families: enabledFamilies(c), served: sv, changing: changes}
	vips, nodePorts := map[vipKey]string{}, map[vipKey]string{}
	for _, id := range slices.Sorted(maps.Keys(changes)) {
		svc := changes[id]
		if svc == nil {
			continue
		}
		base := fmt.Sprintf("services[%q]", id)
		if id == "" {
			v.add(base, nil, "the service ID is empty")
		}
		v.service(base, svc, sv.nodeAddrs, vips, nodePorts)
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
		key := ipvs.ServiceKey{Family: inet.FamilyOf(k.addr), Protocol: k.proto.number(), Addr: k.addr, Port: uint16(k.port)}
		vs := sv.model.servers[key]
		if vs == nil || vs.owner.Kind == NodePort || sv.entries[vs.owner.ServiceID] == nil {
			return "", false
		}
		c = claim{id: vs.owner.ServiceID, port: slices.IndexFunc(sv.entries[vs.owner.ServiceID].Ports,
			func(p Port) bool { return p.Name == vs.owner.PortName })}
	}
	if _, ch := changing[c.id]; ch {
		return "", false
	}
	return c.path(), true
}

// touched is what a commit changed, for an incremental plan: the virtual
// servers and VIPs at every key and address it touched, before (have) and
// after (want), and the set members to add and delete.
type touched struct {
	have, want *desired
	sets       map[Family]*SetChanges
}

// parts is what services add to the kernel state, collected.
type parts struct {
	servers []*virtualServer
	vips    []netip.Addr
	members map[setKey]int
	claims  []nodeClaim
}

type nodeClaim struct {
	k vipKey
	c claim
}

func (p *parts) server(vs *virtualServer) { p.servers = append(p.servers, vs) }
func (p *parts) vip(a netip.Addr)         { p.vips = append(p.vips, a) }
func (p *parts) member(k setKey)          { p.members[k]++ }
func (p *parts) nodePort(k vipKey, c claim) {
	p.claims = append(p.claims, nodeClaim{k, c})
}

// builder is a sink that writes straight into sv: a build.
type builder struct{ sv *served }

func (b builder) server(vs *virtualServer) { b.sv.model.servers[vs.svc.Key()] = vs }
func (b builder) vip(a netip.Addr) {
	if b.sv.vipRefs[a]++; b.sv.vipRefs[a] == 1 {
		b.sv.model.vips[a] = true
		b.sv.model.rules[inet.FamilyOf(a)].Add(iptables.IPVSIPs, iptables.Addr(a))
	}
}
func (b builder) member(k setKey) {
	if shared(k.set) {
		if b.sv.memberRefs[k]++; b.sv.memberRefs[k] > 1 {
			return
		}
	}
	b.sv.model.rules[k.fam].Add(k.set, k.m)
}
func (b builder) nodePort(k vipKey, c claim) { b.sv.nodePorts[k] = c }

// sink receives what a service adds to the kernel state.
type sink interface {
	server(vs *virtualServer)
	vip(a netip.Addr)
	member(k setKey)
	nodePort(k vipKey, c claim)
}

// commit makes changes (valid: see validate) the served State: it takes
// away what each changed service added and adds what its new version adds,
// and returns what changed for an incremental plan, leaving the model's
// rulesets to apply (see SetChanges).
func (sv *served) commit(changes map[string]*Service, c *Config) *touched {
	fams := enabledFamilies(c)
	old, nu := &parts{members: map[setKey]int{}}, &parts{members: map[setKey]int{}}
	copies := make(map[string]*Service, len(changes))
	for id, svc := range changes {
		if e := sv.entries[id]; e != nil {
			sv.contribute(id, e, fams, old)
		}
		if svc != nil {
			cp := cloneService(svc)
			copies[id] = &cp
			sv.contribute(id, &cp, fams, nu)
		}
	}
	t := &touched{have: &desired{servers: map[ipvs.ServiceKey]*virtualServer{}, vips: map[netip.Addr]bool{}},
		want: &desired{servers: map[ipvs.ServiceKey]*virtualServer{}, vips: map[netip.Addr]bool{}}}
	// Before: the virtual servers, VIPs and shared members as they are.
	for _, ps := range []*parts{old, nu} {
		for _, vs := range ps.servers {
			k := vs.svc.Key()
			if h := sv.model.servers[k]; h != nil {
				t.have.servers[k] = h
			}
		}
		for _, a := range ps.vips {
			if sv.vipRefs[a] > 0 {
				t.have.vips[a] = true
			}
		}
	}
	before := map[setKey]bool{}
	for _, ps := range []*parts{old, nu} {
		for k := range ps.members {
			if shared(k.set) {
				before[k] = sv.memberRefs[k] > 0
			} else {
				before[k] = old.members[k] > 0 // only the changed service held it
			}
		}
	}
	// Take the old versions away first: a frontend may move from one
	// changed service to another.
	for id := range changes {
		delete(sv.entries, id)
	}
	for _, cl := range old.claims {
		if h, ok := sv.nodePorts[cl.k]; ok && h.id == cl.c.id {
			delete(sv.nodePorts, cl.k)
		}
	}
	for _, vs := range old.servers {
		delete(sv.model.servers, vs.svc.Key())
	}
	for _, a := range old.vips {
		if sv.vipRefs[a]--; sv.vipRefs[a] <= 0 {
			delete(sv.vipRefs, a)
			delete(sv.model.vips, a)
		}
	}
	for k, n := range old.members {
		if shared(k.set) {
			if sv.memberRefs[k] -= n; sv.memberRefs[k] <= 0 {
				delete(sv.memberRefs, k)
			}
		}
	}
	for id, cp := range copies {
		sv.entries[id] = cp
	}
	for _, cl := range nu.claims {
		sv.nodePorts[cl.k] = cl.c
	}
	for _, vs := range nu.servers {
		k := vs.svc.Key()
		sv.model.servers[k] = vs
	}
	for _, a := range nu.vips {
		sv.vipRefs[a]++
		sv.model.vips[a] = true
	}
	for k, n := range nu.members {
		if shared(k.set) {
			sv.memberRefs[k] += n
		}
	}
	// After.
	for k := range t.have.servers {
		if vs := sv.model.servers[k]; vs != nil {
			t.want.servers[k] = vs
		}
	}
	for _, vs := range nu.servers {
		t.want.servers[vs.svc.Key()] = vs
	}
	for _, ps := range []*parts{old, nu} {
		for _, a := range ps.vips {
			if sv.vipRefs[a] > 0 {
				t.want.vips[a] = true
			}
		}
	}
	type transition struct{ was, now bool }
	flips := make(map[setKey]transition, len(before))
	for k, was := range before {
		now := nu.members[k] > 0
		if shared(k.set) {
			now = sv.memberRefs[k] > 0
		}
		flips[k] = transition{was, now}
	}
	for a := range t.have.vips {
		flips[vipMember(a)] = transition{true, t.want.vips[a]}
	}
	for a := range t.want.vips {
		flips[vipMember(a)] = transition{t.have.vips[a], true}
	}
	for k, f := range flips {
		was, now := f.was, f.now
		if was == now {
			continue
		}
		if t.sets == nil {
			t.sets = map[Family]*SetChanges{}
		}
		ch := t.sets[k.fam]
		if ch == nil {
			ch = &SetChanges{}
			t.sets[k.fam] = ch
		}
		if now {
			ch.Add = append(ch.Add, SetMember{Set: k.set, Member: k.m})
		} else {
			ch.Del = append(ch.Del, SetMember{Set: k.set, Member: k.m})
		}
	}
	for _, ch := range t.sets {
		slices.SortFunc(ch.Add, SetMember.compare)
		slices.SortFunc(ch.Del, SetMember.compare)
	}
	return t
}

// contribute gives to out what svc (valid) adds to the kernel state. It
// reads only svc, the node and the config.
func (sv *served) contribute(id string, svc *Service, fams map[Family]bool, out sink) {
	member := func(f Family, set iptables.SetName, m iptables.Member) {
		if fams[f] {
			out.member(setKey{fam: f, set: set, m: m})
		}
	}
	for i, pt := range svc.Ports {
		add := func(addr netip.Addr, port int, kind FrontendKind, policy TrafficPolicy, bind bool) {
			vs := &virtualServer{
				svc:   virtualService(svc, pt.Protocol, addr, port),
				dests: chooseEndpoints(svc, pt, policy, inet.FamilyOf(addr)),
				owner: frontend{ServiceID: id, PortName: pt.Name, Kind: kind},
			}
			out.server(vs)
			member(inet.FamilyOf(addr), iptables.VirtualServers, ledgerMember(vs.svc.Key()))
			if bind {
				out.vip(addr) // and IPVSIPs, while some service binds it
			}
		}
		if pt.NodePort != 0 {
			out.nodePort(vipKey{port: pt.NodePort, proto: pt.Protocol}, claim{id: id, port: i, node: true})
		}
		for _, a := range svc.ClusterIPs {
			add(a, pt.Port, ClusterIP, svc.InternalTrafficPolicy, true)
		}
		for _, a := range svc.ExternalIPs {
			add(a, pt.Port, ExternalIP, svc.ExternalTrafficPolicy, true)
		}
		for _, a := range svc.LoadBalancerIPs {
			add(a, pt.Port, LoadBalancerIP, svc.ExternalTrafficPolicy, true)
		}
		if pt.NodePort != 0 {
			for _, a := range sv.nodeIPs {
				if servesFamily(svc, inet.FamilyOf(a)) {
					add(a, pt.NodePort, NodePort, svc.ExternalTrafficPolicy, false)
				}
			}
		}
		portMembers(svc, pt, sv.nodeIPs, sv.node.Addresses, fams, member)
	}
	if hc := svc.HealthCheckNodePort; hc != 0 {
		out.nodePort(vipKey{port: hc, proto: TCP}, claim{id: id, port: -1})
		for f := range fams {
			if hasFamily(sv.nodeIPs, f) && servesFamily(svc, f) {
				member(f, iptables.HealthCheckNodePort, iptables.Port(uint16(hc)))
			}
		}
	}
}
