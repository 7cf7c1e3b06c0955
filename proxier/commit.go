package proxier

import (
	"net/netip"
	"slices"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
)

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

func (p *parts) takesServers() bool       { return true }
func (p *parts) takesRest() bool          { return true }
func (p *parts) arena() *arena            { return nil }
func (p *parts) server(vs *virtualServer) { p.servers = append(p.servers, vs) }
func (p *parts) vip(a netip.Addr)         { p.vips = append(p.vips, a) }
func (p *parts) member(k setKey)          { p.members[k]++ }
func (p *parts) nodePort(k vipKey, c claim) {
	p.claims = append(p.claims, nodeClaim{k, c})
}

// builder is a sink that writes straight into sv: a build. A build runs
// two at once over the same services (see build): one takes the virtual
// servers, the other the VIPs, set members and node-port claims, and each
// writes only its own fields of sv.
type builder struct {
	sv      *served
	servers bool   // this one takes the virtual servers, and nothing else
	mem     *arena // what the servers' values are cut from
}

func (b *builder) takesServers() bool { return b.servers }
func (b *builder) takesRest() bool    { return !b.servers }
func (b *builder) arena() *arena      { return b.mem }

func (b *builder) server(vs *virtualServer) { b.sv.model.servers[vs.svc.Key()] = vs }
func (b *builder) vip(a netip.Addr) {
	if b.sv.vipRefs[a]++; b.sv.vipRefs[a] == 1 {
		b.sv.model.vips[a] = true
		b.sv.model.rules[inet.FamilyOf(a)].Add(iptables.IPVSIPs, iptables.Addr(a))
	}
}
func (b *builder) member(k setKey) {
	if shared(k.set) {
		if b.sv.memberRefs[k]++; b.sv.memberRefs[k] > 1 {
			return
		}
	}
	b.sv.model.rules[k.fam].Add(k.set, k.m)
}
func (b *builder) nodePort(k vipKey, c claim) { b.sv.nodePorts[k] = c }

// sink receives what a service adds to the kernel state: the virtual
// servers if it takes them, the rest (VIPs, set members, node-port claims)
// if it takes that.
type sink interface {
	takesServers() bool
	takesRest() bool
	arena() *arena // nil: allocate each value apart
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
	t, before := sv.before(old, nu)
	// The old versions go first: a frontend may move from one changed
	// service to another.
	for id := range changes {
		delete(sv.entries, id)
	}
	sv.release(old)
	for id, cp := range copies {
		sv.entries[id] = cp
	}
	sv.hold(nu)
	sv.after(t, old, nu, before)
	return t
}

// before returns what the kernel holds, as far as sv knows, of what old
// and nu touch: the virtual servers and VIPs, and whether each set member
// is in its set.
func (sv *served) before(old, nu *parts) (*touched, map[setKey]bool) {
	t := &touched{have: &desired{servers: map[ipvs.ServiceKey]*virtualServer{}, vips: map[netip.Addr]bool{}},
		want: &desired{servers: map[ipvs.ServiceKey]*virtualServer{}, vips: map[netip.Addr]bool{}}}
	in := map[setKey]bool{}
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
		for k := range ps.members {
			if shared(k.set) {
				in[k] = sv.memberRefs[k] > 0
			} else {
				in[k] = old.members[k] > 0 // only the changed service held it
			}
		}
	}
	return t, in
}

// release takes away what old added.
func (sv *served) release(old *parts) {
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
}

// hold adds what nu adds.
func (sv *served) hold(nu *parts) {
	for _, cl := range nu.claims {
		sv.nodePorts[cl.k] = cl.c
	}
	for _, vs := range nu.servers {
		sv.model.servers[vs.svc.Key()] = vs
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
}

// after completes t with what the kernel must now hold of what old and nu
// touch, and the set members whose presence changed from before.
func (sv *served) after(t *touched, old, nu *parts, before map[setKey]bool) {
	for k := range t.have.servers {
		if vs := sv.model.servers[k]; vs != nil {
			t.want.servers[k] = vs
		}
	}
	for _, ps := range []*parts{old, nu} {
		for _, a := range ps.vips {
			if sv.vipRefs[a] > 0 {
				t.want.vips[a] = true
			}
		}
	}
	for _, vs := range nu.servers {
		t.want.servers[vs.svc.Key()] = vs
	}
	type presence struct{ was, now bool }
	flips := make(map[setKey]presence, len(before))
	for k, was := range before {
		now := nu.members[k] > 0
		if shared(k.set) {
			now = sv.memberRefs[k] > 0
		}
		flips[k] = presence{was, now}
	}
	// The IPVSIPs set holds the VIPs bound.
	for a := range t.have.vips {
		flips[vipMember(a)] = presence{true, t.want.vips[a]}
	}
	for a := range t.want.vips {
		flips[vipMember(a)] = presence{t.have.vips[a], true}
	}
	for k, f := range flips {
		if f.was == f.now {
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
		m := SetMember{Set: k.set, Member: k.m}
		if f.now {
			ch.Add = append(ch.Add, m)
		} else {
			ch.Del = append(ch.Del, m)
		}
	}
	for _, ch := range t.sets {
		slices.SortFunc(ch.Add, SetMember.compare)
		slices.SortFunc(ch.Del, SetMember.compare)
	}
}
