package proxier

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvsadm"
)

// Plan is the difference between a new State and what the proxier last
// applied, as the requests that close it, split by phase in the order they
// are applied. It can be inspected and rendered (String) without applying it.
type Plan struct {
	// Rules are the netfilter rulesets to apply first, per family: the new
	// options with the members of both the old and the new state, so every
	// rule and set entry a new virtual server or VIP needs exists before it.
	// A family whose rules do not change is absent.
	Rules map[Family]*iptables.Ruleset
	// IPVSAdd adds and updates virtual servers and destinations, before any
	// VIP that needs them is bound; a destination that starts draining is
	// an update to weight 0 here, and one that returns an update back.
	IPVSAdd ipvs.Batch
	// Bind are the addresses to bind on the VIP link, last of the additions.
	Bind []netip.Addr
	// Unbind are the addresses to remove from the VIP link, first of the
	// removals, so a VIP stops answering before its virtual servers go.
	Unbind []netip.Addr
	// IPVSDelete deletes virtual servers and destinations.
	IPVSDelete ipvs.Batch
	// RulesAfter are the final rulesets, applied last, once the VIPs and
	// virtual servers that needed the removed entries are gone. A family
	// absent here has nothing to remove.
	RulesAfter map[Family]*iptables.Ruleset
	// SetChanges replace Rules and RulesAfter in a plan that changes only
	// some services (an Update, or a Sync once the kernel is known): per
	// family, the set members to add before the other phases and to delete
	// after them; their back end writes just those. A family absent has
	// nothing to change.
	SetChanges map[Family]*SetChanges
	// DaemonStops and DaemonStarts are the sync daemons of
	// Config.SyncDaemons the plan stops (a role whose daemon changed), then
	// starts, after everything else: at the first Sync, and after a
	// failure or Cleanup. A dry run (Plan) lists every configured daemon
	// the Proxier does not run yet.
	DaemonStops  []ipvs.DaemonState
	DaemonStarts []SyncDaemon

	linkName string  // for rendering
	vipMode  VIPMode // for rendering
	backends map[Family]Rules
	// live are the rulesets SetChanges change (the proxier's, which its
	// back ends applied last): apply changes them as it applies.
	live map[Family]*iptables.Ruleset
}

// SetChanges are the set members a plan adds and deletes in one family.
type SetChanges struct {
	Add, Del []SetMember
}

// SetMember is a member of one of the netfilter sets.
type SetMember struct {
	Set    iptables.SetName
	Member iptables.Member
}

func (m SetMember) compare(o SetMember) int {
	if m.Set != o.Set {
		return int(m.Set) - int(o.Set)
	}
	return m.Member.Compare(o.Member)
}

// Empty reports whether applying the plan would send nothing to the kernel.
func (p *Plan) Empty() bool {
	return p.IPVSAdd.Len() == 0 && p.IPVSDelete.Len() == 0 && len(p.Bind) == 0 && len(p.Unbind) == 0 &&
		len(p.Rules) == 0 && len(p.RulesAfter) == 0 && len(p.SetChanges) == 0 &&
		len(p.DaemonStops) == 0 && len(p.DaemonStarts) == 0
}

// changeSets makes the live rulesets' SetChanges (the deletions if del,
// else the additions) and returns the rulesets it changed, to apply.
func (p *Plan) changeSets(del bool) map[Family]*iptables.Ruleset {
	var out map[Family]*iptables.Ruleset
	for f, ch := range p.SetChanges {
		ms := ch.Add
		if del {
			ms = ch.Del
		}
		if len(ms) == 0 {
			continue
		}
		r := p.live[f]
		for _, m := range ms {
			if del {
				r.Remove(m.Set, m.Member)
			} else {
				r.Add(m.Set, m.Member)
			}
		}
		if out == nil {
			out = map[Family]*iptables.Ruleset{}
		}
		out[f] = r
	}
	return out
}

// settle makes all of SetChanges in the live rulesets (again: adding a
// member twice or deleting an absent one changes nothing).
func (p *Plan) settle() {
	for f, ch := range p.SetChanges {
		r := p.live[f]
		for _, m := range ch.Add {
			if !r.Has(m.Set, m.Member) {
				r.Add(m.Set, m.Member)
			}
		}
		for _, m := range ch.Del {
			if r.Has(m.Set, m.Member) {
				r.Remove(m.Set, m.Member)
			}
		}
	}
}

// render writes the plan as the reference tools' input, phase by phase:
// `ipvsadm -R` lines and `ip addr` (or, with VIPLocalRoutes, `ip route`)
// commands on linkName.
func (p *Plan) render(linkName string) (string, error) {
	var b strings.Builder
	section := func(title string) { fmt.Fprintf(&b, "# %s\n", title) }
	ipvsText := func(batch *ipvs.Batch) error {
		t, err := ipvsadm.MarshalBatch(batch)
		if err != nil {
			return err
		}
		b.Write(t)
		return nil
	}
	rules := func(when string, m map[Family]*iptables.Ruleset) error {
		for _, f := range []Family{IPv4, IPv6} {
			r := m[f]
			if r == nil {
				continue
			}
			section(fmt.Sprintf("netfilter %v, %s", f, when))
			be := p.backends[f]
			if be == nil {
				fmt.Fprintf(&b, "# (no back end to render with)\n")
				continue
			}
			t, err := be.Render(r)
			if err != nil {
				return err
			}
			b.WriteString(t)
		}
		return nil
	}
	setChanges := func(when string, del bool) {
		for _, f := range []Family{IPv4, IPv6} {
			ch := p.SetChanges[f]
			if ch == nil {
				continue
			}
			ms, verb := ch.Add, "add"
			if del {
				ms, verb = ch.Del, "delete"
			}
			if len(ms) == 0 {
				continue
			}
			section(fmt.Sprintf("netfilter %v, %s", f, when))
			for _, m := range ms {
				fmt.Fprintf(&b, "%s %v %v\n", verb, m.Set, m.Member)
			}
		}
	}
	if err := rules("first: old and new entries", p.Rules); err != nil {
		return "", err
	}
	setChanges("first: set members added", false)
	if p.IPVSAdd.Len() > 0 {
		section("ipvs: add and update (ipvsadm -R)")
		if err := ipvsText(&p.IPVSAdd); err != nil {
			return "", err
		}
	}
	if len(p.Bind) > 0 {
		section("vips: bind")
		for _, a := range p.Bind {
			fmt.Fprintln(&b, vipCommand(p.vipMode, true, a, linkName))
		}
	}
	if len(p.Unbind) > 0 {
		section("vips: unbind")
		for _, a := range p.Unbind {
			fmt.Fprintln(&b, vipCommand(p.vipMode, false, a, linkName))
		}
	}
	if p.IPVSDelete.Len() > 0 {
		section("ipvs: delete (ipvsadm -R)")
		if err := ipvsText(&p.IPVSDelete); err != nil {
			return "", err
		}
	}
	if err := rules("last: the final entries", p.RulesAfter); err != nil {
		return "", err
	}
	setChanges("last: set members deleted", true)
	if len(p.DaemonStops)+len(p.DaemonStarts) > 0 {
		section("ipvs: sync daemons (ipvsadm)")
		for _, s := range p.DaemonStops {
			fmt.Fprintln(&b, "ipvsadm "+strings.Join(ipvsadm.StopDaemonArgs(s), " "))
		}
		for _, d := range p.DaemonStarts {
			fmt.Fprintln(&b, "ipvsadm "+strings.Join(ipvsadm.StartDaemonArgs(d), " "))
		}
	}
	return b.String(), nil
}

// makePlan diffs want against have (what was last applied; nil means
// nothing). Destinations that stay are updated in place, never deleted and
// re-added. The requests are in a stable order.
func makePlan(have, want *desired) *Plan {
	if have == nil {
		have = &desired{servers: map[ipvs.ServiceKey]*virtualServer{}, vips: map[netip.Addr]bool{}}
	}
	p := &Plan{}
	// The VIPs and rules beside the virtual servers, at once: they write
	// other fields of p.
	var wg sync.WaitGroup
	wg.Go(func() {
		p.Bind, p.Unbind = vipsOnlyIn(want.vips, have.vips), vipsOnlyIn(have.vips, want.vips)
		p.Rules, p.RulesAfter = planRules(have.rules, want.rules)
	})
	planServers(p, have, want)
	wg.Wait()
	return p
}

// serverChange is a virtual server that want adds or changes: its key, and
// its versions in want and in have (nil if new).
type serverChange struct {
	k    ipvs.ServiceKey
	w, h *virtualServer
}

// planServers adds to p the IPVS requests that turn have's virtual servers
// into want's.
func planServers(p *Plan, have, want *desired) {
	// Find what changed first, without sorting: a sync's cost in user space
	// should follow the change too, and most virtual servers are unchanged.
	var changed []serverChange
	n := 0 // requests at most: room for a first sync's every request
	for k, w := range want.servers {
		if h := have.servers[k]; h == nil || h.svc != w.svc || !h.dests.equal(w.dests) {
			if changed == nil {
				changed = make([]serverChange, 0, len(want.servers)-min(len(have.servers), len(want.servers))+1)
			}
			changed = append(changed, serverChange{k, w, h})
			n += 1 + len(w.dests)
		}
	}
	slices.SortFunc(changed, func(x, y serverChange) int { return compareServiceKeys(x.k, y.k) })
	p.IPVSAdd.Grow(n)
	if len(changed) < parallelPlan {
		planChanges(p, changed)
	} else {
		// A first sync's tens of thousands: two halves at once, the
		// second into batches of its own, appended after the first.
		half := len(changed) / 2
		var second Plan
		var wg sync.WaitGroup
		wg.Go(func() {
			n := 0
			for _, c := range changed[half:] {
				n += 1 + len(c.w.dests)
			}
			second.IPVSAdd.Grow(n)
			planChanges(&second, changed[half:])
		})
		planChanges(p, changed[:half])
		wg.Wait()
		p.IPVSAdd.Append(&second.IPVSAdd)
		p.IPVSDelete.Append(&second.IPVSDelete)
	}
	var gone []ipvs.ServiceKey
	for k := range have.servers {
		if want.servers[k] == nil {
			gone = append(gone, k)
		}
	}
	slices.SortFunc(gone, compareServiceKeys)
	for _, k := range gone {
		p.IPVSDelete.DeleteService(k) // its destinations go with it
	}
}

// parallelPlan is how many changed virtual servers a plan collects in two
// halves at once (planServers): a first sync's, not an update's.
const parallelPlan = 2048

// planChanges adds to p the requests of changed, in order.
func planChanges(p *Plan, changed []serverChange) {
	for _, c := range changed {
		if c.h == nil {
			p.IPVSAdd.AddService(c.w.svc)
		} else if c.h.svc != c.w.svc {
			p.IPVSAdd.UpdateService(c.w.svc)
		}
		for _, wd := range c.w.dests {
			switch hd, ok := lookupDest(c.h, wd.Key()); {
			case !ok:
				p.IPVSAdd.AddDestination(c.k, wd)
			case hd != wd:
				p.IPVSAdd.UpdateDestination(c.k, wd)
			}
		}
		if c.h != nil {
			for _, hd := range c.h.dests {
				if dk := hd.Key(); !c.w.dests.has(dk) {
					p.IPVSDelete.DeleteDestination(c.k, dk)
				}
			}
		}
	}
}

// vipsOnlyIn returns the addresses of a that b lacks, sorted (nil if none).
func vipsOnlyIn(a, b map[netip.Addr]bool) []netip.Addr {
	var out []netip.Addr
	for x := range a {
		if !b[x] {
			if out == nil {
				out = make([]netip.Addr, 0, len(a)-min(len(a), len(b))+1)
			}
			out = append(out, x)
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// planRules returns the rulesets to apply first and last, per family, to
// turn have's rules into want's.
func planRules(have, want map[Family]*iptables.Ruleset) (first, after map[Family]*iptables.Ruleset) {
	first, after = map[Family]*iptables.Ruleset{}, map[Family]*iptables.Ruleset{}
	for f, next := range want {
		prev := have[f]
		if prev != nil && next.Equal(prev) {
			continue // unchanged: no union to build
		}
		// Nothing to remove (next holds all of prev's members, as on a
		// first sync, where prev is the ledger as read): apply next itself,
		// so that it is the ruleset the back end applied last and later
		// changes to it cost what they change; no union to build.
		u := next
		if prev != nil && !next.Contains(prev) {
			if u = unionRuleset(prev, next); u.Equal(next) {
				u = next
			}
		}
		if prev == nil || !u.Equal(prev) {
			first[f] = u
		}
		if u != next && !next.Equal(u) {
			after[f] = next
		}
	}
	return first, after
}

func lookupDest(vs *virtualServer, k ipvs.DestinationKey) (ipvs.Destination, bool) {
	if vs == nil {
		return ipvs.Destination{}, false
	}
	return vs.dests.get(k)
}

func sortedKeys(m map[ipvs.ServiceKey]*virtualServer) []ipvs.ServiceKey {
	keys := make([]ipvs.ServiceKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareServiceKeys)
	return keys
}

func compareServiceKeys(x, y ipvs.ServiceKey) int {
	if c := x.Addr.Compare(y.Addr); c != 0 {
		return c
	}
	if x.Port != y.Port {
		return int(x.Port) - int(y.Port)
	}
	if x.Protocol != y.Protocol {
		return int(x.Protocol) - int(y.Protocol)
	}
	if x.FWMark != y.FWMark { // firewall-mark keys: no address, port or protocol
		return cmp.Compare(x.FWMark, y.FWMark)
	}
	return int(x.Family) - int(y.Family)
}
