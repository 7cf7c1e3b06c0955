package iptables

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/ipset"
)

// drift reads the owned chains (one iptables-save) and the owned ipsets (one
// ipset dump) and compares them with r, changing nothing.
func (b *iptBackend) drift(ctx context.Context, r *Ruleset) ([]ObjectDrift, error) {
	s, err := b.save(ctx, b.flavor)
	if err != nil {
		return nil, err
	}
	out := chainDrift(r, b.names, s)
	infos, err := b.ownedSets(ctx)
	if err != nil {
		return nil, err
	}
	for _, set := range Sets() {
		if !set.isIPSet() {
			continue
		}
		if d, bad := ipsetDrift(r, b.names, set, infos); bad {
			out = append(out, d)
		}
	}
	return out, nil
}

// chainDrift compares the owned chains and the jump rules in iptables-save
// output s with the rules r renders.
func chainDrift(r *Ruleset, n *iptNames, s saved) []ObjectDrift {
	var out []ObjectDrift
	filter, nat := renderIPTables(r, n)
	for _, t := range []*iptTable{nat, filter} {
		for _, c := range slices.Sorted(slices.Values(t.chains)) {
			obj := "chain " + t.name + " " + c
			if !s.hasChain(t.name, c) {
				out = append(out, ObjectDrift{Object: obj, Problem: "missing"})
				continue
			}
			var want, got []item
			for _, spec := range t.rules[c] {
				l := "-A " + c + " " + spec
				want = append(want, item{l, l})
			}
			for _, l := range s[t.name].byChain[c] {
				got = append(got, item{l, l})
			}
			if d, bad := listDrift(obj, "rules", want, got, true); bad {
				out = append(out, d)
			}
		}
	}
	for _, j := range n.jumpRules() {
		if !s.hasRule(j.table, j.line()) {
			out = append(out, ObjectDrift{Object: "jump " + j.table + " " + j.chain + " -> " + j.target(), Problem: "missing"})
		}
	}
	return out
}

// target is the owned chain the jump rule leads to.
func (j jumpRule) target() string { return j.spec[strings.LastIndex(j.spec, "-j ")+3:] }

// ownedSets returns the owned ipsets the kernel has, by name, with their
// entries: one dump of every set, or, if that fails (a foreign set of a
// type package ipset does not model cannot be decoded), a dump of the
// headers and one per owned set.
func (b *iptBackend) ownedSets(ctx context.Context) (map[string]ipset.SetInfo, error) {
	owned := map[string]bool{}
	for _, s := range Sets() {
		if s.isIPSet() {
			owned[b.names.ipset(s, b.fam)] = true
		}
	}
	out := map[string]ipset.SetInfo{}
	all, err := b.sets.ListAll(ctx, false)
	if err == nil {
		for _, si := range all {
			if owned[si.Name] {
				out[si.Name] = si
			}
		}
		return out, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("iptables: listing ipsets: %w", err)
	}
	heads, herr := b.sets.ListAll(ctx, true)
	if herr != nil {
		return nil, fmt.Errorf("iptables: listing ipsets: %w", errors.Join(err, herr))
	}
	for _, h := range heads {
		if !owned[h.Name] {
			continue
		}
		si, err := b.sets.List(ctx, h.Name)
		if err != nil {
			return nil, fmt.Errorf("iptables: listing ipset %s: %w", h.Name, err)
		}
		out[h.Name] = si
	}
	return out, nil
}

// ipsetDrift compares the kernel's copy of set s (in infos, by name) with
// the members r gives it.
func ipsetDrift(r *Ruleset, n *iptNames, s SetName, infos map[string]ipset.SetInfo) (ObjectDrift, bool) {
	f := r.family()
	spec := ipsetSpec(n, f, s)
	obj := "set " + spec.Name
	si, ok := infos[spec.Name]
	if !ok {
		return ObjectDrift{Object: obj, Problem: "missing"}, true
	}
	fam := func(x ipset.Family) ipset.Family {
		if spec.Family == 0 {
			return 0 // bitmap:port has none
		}
		if x == 0 {
			return inet.IPv4
		}
		return x
	}
	if si.Type != spec.Type || fam(si.Family) != fam(spec.Family) {
		return ObjectDrift{Object: obj, Problem: fmt.Sprintf("type %s family %s, want %s family %s", si.Type, ipset.FamilyName(fam(si.Family)), spec.Type, ipset.FamilyName(fam(spec.Family)))}, true
	}
	var want, got []item
	for _, e := range ipsetEntries(r.Members(s)) {
		t := e.Key().String()
		want = append(want, item{t, t})
	}
	for _, e := range si.Entries {
		t := e.Key().String()
		got = append(got, item{t, t})
	}
	return listDrift(obj, "members", want, got, false)
}
