package iptables

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/ipset"
)

// ownership is what one read of the kernel says about the back end's names:
// which of its chains and ipsets exist, all of them proven its own.
type ownership struct {
	saves map[Flavor]saved
	// chains holds, per flavor, the owned chains that exist ("nat X").
	chains map[Flavor]map[string]bool
	// sets holds the owned ipsets that exist, by name.
	sets map[string]ipset.SetInfo
}

// empty reports whether none of the back end's objects exist.
func (o *ownership) empty() bool {
	for _, cs := range o.chains {
		if len(cs) > 0 {
			return false
		}
	}
	return len(o.sets) == 0
}

// decideOwnership checks, from the iptables-save output of each flavor the
// caller will touch and the ipset headers, that every object named n that
// exists is n's instance's: each owned chain starts with the marker rule;
// each ipset of an owned name is referenced by the owner chain (in any of
// the flavors). An object in known (keys from knownChain and knownSet),
// which the back end wrote itself since its last Cleanup, is its own even
// without its mark (someone flushed the chain, or a restore failed after
// the set was made);
// with types, it is of the type the back end writes; with jumps, no foreign
// rule leads into an owned chain (Cleanup could not delete it). It returns a
// *ForeignError naming the first object that fails.
func decideOwnership(n *iptNames, fam Family, saves map[Flavor]saved, heads []ipset.SetInfo, known map[string]bool, types, jumps bool) (*ownership, error) {
	d := &ownershipCheck{n: n, fam: fam, known: known, ours: n.ipsets(fam), referenced: map[string]bool{}}
	o := &ownership{saves: saves, chains: map[Flavor]map[string]bool{}, sets: map[string]ipset.SetInfo{}}
	for _, fl := range []Flavor{FlavorLegacy, FlavorNFT} {
		s, ok := saves[fl]
		if !ok {
			continue
		}
		o.chains[fl] = map[string]bool{}
		for _, table := range []string{"nat", "filter"} {
			owned, err := d.ownedChains(fl, s, table)
			if err != nil {
				return nil, err
			}
			for c := range owned {
				o.chains[fl][table+" "+c] = true
			}
			if owned[n.owner] {
				d.ownerRefs(s[table].byChain[n.owner])
			}
			if !jumps {
				continue
			}
			if err := d.foreignJumps(s, table, owned); err != nil {
				return nil, err
			}
		}
	}
	for _, h := range heads {
		if _, ok := d.ours[h.Name]; !ok {
			continue
		}
		if err := d.ownedSet(h, types); err != nil {
			return nil, err
		}
		o.sets[h.Name] = h
	}
	return o, nil
}

// ownershipCheck is one decideOwnership: what it checks against, and the
// owned ipsets the owner chains it has read reference.
type ownershipCheck struct {
	n          *iptNames
	fam        Family
	known      map[string]bool
	ours       map[string]SetName // the owned ipsets, by name
	referenced map[string]bool
}

// ownedChains returns the chains of n in table that exist in flavor fl's
// save s, after checking that each is its own (the marker rule first, or
// known): a *ForeignError names the first that is not.
func (d *ownershipCheck) ownedChains(fl Flavor, s saved, table string) (map[string]bool, error) {
	n := d.n
	owned := map[string]bool{}
	for _, c := range n.chains(table) {
		if !s.hasChain(table, c) {
			continue
		}
		rules := s[table].byChain[c]
		if (len(rules) == 0 || rules[0] != n.markerLine(c)) && !d.known[knownChain(fl, table, c)] {
			found := "no rules"
			if len(rules) > 0 {
				found = "first rule " + rules[0]
			}
			return nil, &ForeignError{Kind: "chain", Name: table + " " + c,
				Reason: fmt.Sprintf("%s shows %s, not the marker %q", fl.binary(d.fam, "save"), found, n.mark)}
		}
		owned[c] = true
	}
	return owned, nil
}

// ownerRefs notes the owned ipsets the owner chain's rules reference.
func (d *ownershipCheck) ownerRefs(lines []string) {
	for _, l := range lines {
		for name, set := range d.ours {
			if l == "-A "+d.n.owner+" "+d.n.ownerRef(name, set.Shape()) {
				d.referenced[name] = true
			}
		}
	}
}

// foreignJumps returns a *ForeignError for the first rule of a chain not
// owned in table that leads into an owned chain without the mark.
func (d *ownershipCheck) foreignJumps(s saved, table string, owned map[string]bool) error {
	n := d.n
	for chain, lines := range s[table].byChainOrEmpty() {
		if owned[chain] {
			continue
		}
		for _, l := range lines {
			if t := ruleTarget(l); owned[t] && !strings.Contains(l, " --comment "+saveQuote(n.mark)+" ") {
				return &ForeignError{Kind: "rule", Name: table + " " + l,
					Reason: fmt.Sprintf("it leads into chain %s without the mark %q", t, n.mark)}
			}
		}
	}
	return nil
}

// ownedSet checks that ipset h, of an owned name, is its own (referenced
// by an owner chain, or known) and, with types, of the type it writes.
func (d *ownershipCheck) ownedSet(h ipset.SetInfo, types bool) error {
	if !d.referenced[h.Name] && !d.known[knownSet(h.Name)] {
		return &ForeignError{Kind: "ipset", Name: h.Name,
			Reason: fmt.Sprintf("%s with %d references, none from the owner chain filter %s", h.Type, h.References, d.n.owner)}
	}
	if spec := ipsetSpec(d.n, d.fam, d.ours[h.Name]); types && !sameType(h.Set, spec) {
		return &ForeignError{Kind: "ipset", Name: h.Name,
			Reason: fmt.Sprintf("type %s family %s, the back end writes %s family %s", h.Type, ipset.FamilyName(setFamily(h.Set)), spec.Type, ipset.FamilyName(setFamily(spec)))}
	}
	return nil
}

// knownChain and knownSet are the keys of the objects a back end knows it
// wrote.
func knownChain(fl Flavor, table, chain string) string {
	return "chain " + fl.String() + " " + table + " " + chain
}
func knownSet(name string) string { return "ipset " + name }

// ruleTarget returns the chain an iptables-save rule line jumps or goes to.
func ruleTarget(l string) string {
	f := strings.Fields(l)
	for i := len(f) - 2; i >= 0; i-- {
		if f[i] == "-j" || f[i] == "-g" {
			return f[i+1]
		}
	}
	return ""
}

// setFamily is s's family as the kernel reports it: inet for a hash set
// created without one, none for bitmap:port.
func setFamily(s ipset.Set) ipset.Family {
	if s.Type == ipset.BitmapPort {
		return 0
	}
	if s.Family == 0 {
		return inet.IPv4
	}
	return s.Family
}

func sameType(a, b ipset.Set) bool { return a.Type == b.Type && setFamily(a) == setFamily(b) }

// readOwnership reads iptables-save of each flavor in fls (a flavor whose
// binary is missing holds nothing) and the ipset headers, once, and decides
// ownership (see decideOwnership), changing nothing.
func (b *iptBackend) readOwnership(ctx context.Context, fls []Flavor, types, jumps bool) (*ownership, error) {
	saves := map[Flavor]saved{}
	for _, fl := range fls {
		s, err := b.save(ctx, fl)
		if errors.Is(err, exec.ErrNotFound) && fl != b.flavor {
			continue
		}
		if err != nil {
			return nil, err
		}
		saves[fl] = s
	}
	var heads []ipset.SetInfo
	if b.sets != nil {
		var err error
		if heads, err = b.sets.ListAll(ctx, true); err != nil {
			return nil, fmt.Errorf("iptables: listing ipsets: %w", err)
		}
	}
	known := b.known
	if b.adopting {
		known = b.adoptable(fls)
	}
	return decideOwnership(b.names, b.fam, saves, heads, known, types, jumps)
}

// adoptable is what the back end knows it wrote, with every chain (of
// flavors fls) and ipset of its names: while adopting, an unmarked object of
// kube-proxy's names is taken as its own.
func (b *iptBackend) adoptable(fls []Flavor) map[string]bool {
	k := map[string]bool{}
	for key := range b.known {
		k[key] = true
	}
	for _, fl := range fls {
		for _, table := range []string{"nat", "filter"} {
			for _, c := range b.names.chains(table) {
				k[knownChain(fl, table, c)] = true
			}
		}
	}
	for name := range b.names.ipsets(b.fam) {
		k[knownSet(name)] = true
	}
	return k
}

// dropAdoptedJumps deletes, after the back end's own jump rules are in
// place, the unmarked rules of the built-in (and any other) chains that
// lead into its chains: kube-proxy's jump rules, adopted with the chains.
// s is iptables-save of the back end's flavor as read before the sync.
func (b *iptBackend) dropAdoptedJumps(ctx context.Context, own *ownership) error {
	s := own.saves[b.flavor]
	var text strings.Builder
	for _, table := range []string{"nat", "filter"} {
		var del []string
		for chain, lines := range s[table].byChainOrEmpty() {
			if own.chains[b.flavor][table+" "+chain] {
				continue
			}
			for _, l := range lines {
				if own.chains[b.flavor][table+" "+ruleTarget(l)] && !strings.Contains(l, " --comment "+saveQuote(b.names.mark)+" ") {
					del = append(del, "-D "+l[len("-A "):])
				}
			}
		}
		if len(del) == 0 {
			continue
		}
		slices.Sort(del)
		fmt.Fprintf(&text, "*%s\n%s\nCOMMIT\n", table, strings.Join(del, "\n"))
	}
	if text.Len() == 0 {
		return nil
	}
	bin := b.flavor.binary(b.fam, "restore")
	b.stats.RuleWrites++
	if _, err := b.run.run(ctx, []byte(text.String()), bin, "-w", "--noflush"); err != nil {
		return fmt.Errorf("deleting kube-proxy's jump rules: %w", restoreError(bin, b.fam, text.String(), err))
	}
	return nil
}

// ownLedger is the ledger of the back end's flavor.
func (b *iptBackend) ownLedger(ctx context.Context) (*Ruleset, error) {
	return b.ledger(ctx, []Flavor{b.flavor})
}

// ledger reads the owned VirtualServers and IPVSIPs ipsets, as the owner
// chains of flavors fls prove them: nil if nothing is owned.
func (b *iptBackend) ledger(ctx context.Context, fls []Flavor) (*Ruleset, error) {
	return b.readSets(ctx, fls, []SetName{VirtualServers, IPVSIPs})
}

// setMembers is SetMembers: every owned ipset's members.
func (b *iptBackend) setMembers(ctx context.Context) (*Ruleset, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var all []SetName
	for _, s := range Sets() {
		if s.isIPSet() {
			all = append(all, s)
		}
	}
	return b.readSets(ctx, []Flavor{b.flavor}, all)
}

// readSets reads the members of the ipsets of sets that the owner chains
// of flavors fls prove owned: nil if nothing is owned.
func (b *iptBackend) readSets(ctx context.Context, fls []Flavor, sets []SetName) (*Ruleset, error) {
	o, err := b.readOwnership(ctx, fls, true, false)
	if err != nil || o.empty() {
		return nil, err
	}
	r := NewRuleset(b.fam, Options{})
	for _, s := range sets {
		name := b.names.ipset(s, b.fam)
		if _, ok := o.sets[name]; !ok {
			continue
		}
		si, err := b.sets.List(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("iptables: listing ipset %s: %w", name, err)
		}
		for _, e := range si.Entries {
			r.Add(s, memberOf(s.Shape(), e))
		}
	}
	return r, nil
}

// mergeLedgers is the ledger sets of a and b (either may be nil) in one
// Ruleset of family fam, or nil if both are.
func mergeLedgers(fam Family, a, b *Ruleset) *Ruleset {
	if a == nil && b == nil {
		return nil
	}
	out := NewRuleset(fam, Options{})
	for _, r := range []*Ruleset{a, b} {
		if r == nil {
			continue
		}
		for _, s := range []SetName{VirtualServers, IPVSIPs} {
			out.Add(s, r.Members(s)...)
		}
	}
	return out
}

// memberOf is the Member of shape sh that ipset entry e holds.
func memberOf(sh Shape, e ipset.Entry) Member {
	switch sh {
	case ShapeAddr:
		return Addr(e.IP)
	case ShapePort:
		return Port(e.Port)
	case ShapeAddrPortAddr:
		return AddrPortAddr(e.IP, Protocol(e.Proto), e.Port, e.IP2)
	case ShapeAddrPortNet:
		return AddrPortNet(e.IP, Protocol(e.Proto), e.Port, e.Net2)
	}
	return AddrPort(e.IP, Protocol(e.Proto), e.Port)
}
