package iptables

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// drift reads the owned table back (its sets with their elements, its
// chains with their rules) and compares it with r, changing nothing. A
// table of its name without the mark is reported as a *ForeignError.
func (b *nftBackend) drift(ctx context.Context, r *Ruleset) ([]ObjectDrift, error) {
	var out []ObjectDrift
	err := b.bounded(ctx, func() error {
		var err error
		out, err = b.readDrift(r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("nftables: checking table %s %s: %w", b.cfg.Family, b.table.Name, err)
	}
	return out, nil
}

func (b *nftBackend) readDrift(r *Ruleset) ([]ObjectDrift, error) {
	fam, _ := nftFamily(b.cfg.Family)
	prefix := fam + " " + b.table.Name + " "
	tables, err := b.conn.ListTablesOfFamily(b.table.Family)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(tables, func(t *nftables.Table) bool { return t.Name == b.table.Name })
	if i < 0 {
		return []ObjectDrift{{Object: "table " + strings.TrimSpace(prefix), Problem: "missing"}}, nil
	}
	var out []ObjectDrift
	if f := tables[i].Flags; f != 0 {
		// Dormant turns the whole table off.
		problem := fmt.Sprintf("flags %#x, want none", uint32(f))
		if f&nftables.TableFlagDormant != 0 {
			problem = fmt.Sprintf("dormant (flags %#x), want active", uint32(f))
		}
		out = append(out, ObjectDrift{Object: "table " + strings.TrimSpace(prefix), Problem: problem})
	}
	sets, err := b.conn.GetSets(b.table)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(sets, func(s *nftables.Set) bool { return s.Comment == b.mark }) {
		// Not ours (any more): nothing in it is reported.
		return nil, foreignTable(b.cfg.Family, b.table.Name, b.mark, len(sets))
	}
	have := map[string]*nftables.Set{}
	for _, s := range sets {
		have[s.Name] = s
	}
	for _, s := range Sets() {
		d, bad, err := b.checkSet(r, s, have[s.String()], "set "+prefix+s.String())
		if err != nil {
			return nil, err
		}
		if bad {
			out = append(out, d)
		}
		delete(have, s.String())
	}
	for _, name := range slices.Sorted(maps.Keys(have)) {
		out = append(out, ObjectDrift{Object: "set " + prefix + name, Problem: "not applied by this back end"})
	}

	all, err := b.conn.ListChainsOfTableFamily(b.table.Family)
	if err != nil {
		return nil, err
	}
	chains := map[string]*nftables.Chain{}
	for _, c := range all {
		if c.Table != nil && c.Table.Name == b.table.Name {
			chains[c.Name] = c
		}
	}
	for _, ch := range nftChains(r, nil) {
		obj := "chain " + prefix + ch.name
		got := chains[ch.name]
		delete(chains, ch.name)
		if got == nil {
			out = append(out, ObjectDrift{Object: obj, Problem: "missing"})
			continue
		}
		if want, have := baseText(ch.base), chainBaseText(got); want != have {
			out = append(out, ObjectDrift{Object: obj, Problem: fmt.Sprintf("%s, want %s", have, want)})
		}
		rules, err := b.conn.GetRules(b.table, got)
		if err != nil {
			return nil, err
		}
		d, bad, err := b.ruleDrift(obj, ch.rules, rules)
		if err != nil {
			return nil, err
		}
		if bad {
			out = append(out, d)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(chains)) {
		out = append(out, ObjectDrift{Object: "chain " + prefix + name, Problem: "not applied by this back end"})
	}
	return out, nil
}

// checkSet compares the kernel's set got (nil: missing) with the members r
// gives set s.
func (b *nftBackend) checkSet(r *Ruleset, s SetName, got *nftables.Set, obj string) (ObjectDrift, bool, error) {
	if got == nil {
		return ObjectDrift{Object: obj, Problem: "missing"}, true, nil
	}
	spec := nftSetSpec(b.table, b.cfg.Family, s, b.mark)
	if got.KeyType.Bytes != spec.KeyType.Bytes || got.Interval != spec.Interval {
		return ObjectDrift{Object: obj, Problem: fmt.Sprintf("key of %d bytes (interval %v), want %d bytes (interval %v)",
			got.KeyType.Bytes, got.Interval, spec.KeyType.Bytes, spec.Interval)}, true, nil
	}
	if got.Comment != b.mark {
		return ObjectDrift{Object: obj, Problem: fmt.Sprintf("comment %q, want %q", got.Comment, b.mark)}, true, nil
	}
	elems, err := b.conn.GetSetElements(got)
	if err != nil {
		return ObjectDrift{}, false, err
	}
	var want, have []item
	for _, m := range nftMembers(r, s) {
		want = append(want, item{elemKey(nftElem(s, m)), nftElement(s, m)})
	}
	for _, e := range elems {
		text := fmt.Sprintf("%x", e.Key)
		if m, ok := nftMemberOf(s, b.cfg.Family, e); ok {
			text = nftElement(s, m)
		}
		have = append(have, item{elemKey(e), text})
	}
	d, bad := listDrift(obj, "members", want, have, false)
	return d, bad, nil
}

// ruleDrift compares a chain's rules in the kernel with the wanted ones,
// in order. A rule's identity is its expressions as sent to the kernel;
// an extra rule is shown by its handle.
func (b *nftBackend) ruleDrift(obj string, want []nftRule, got []*nftables.Rule) (ObjectDrift, bool, error) {
	fam := byte(unix.NFPROTO_IPV4)
	if b.cfg.Family == IPv6 {
		fam = unix.NFPROTO_IPV6
	}
	var w, g []item
	for _, rl := range want {
		// The library reads no byteorder expression back (it skips what
		// it cannot decode): leave it out of the wanted rule too.
		es := slices.DeleteFunc(exprs(rl.exprs), func(e expr.Any) bool {
			_, ok := e.(*expr.Byteorder)
			return ok
		})
		k, err := exprKey(fam, es)
		if err != nil {
			return ObjectDrift{}, false, err
		}
		w = append(w, item{k, rl.text})
	}
	for _, rl := range got {
		k, err := exprKey(fam, rl.Exprs)
		if err != nil {
			return ObjectDrift{}, false, err
		}
		g = append(g, item{k, fmt.Sprintf("handle %d", rl.Handle)})
	}
	d, bad := listDrift(obj, "rules", w, g, true)
	return d, bad, nil
}

// exprKey is a rule's expressions as the library encodes them: equal for a
// rule the back end built and the same rule read back from the kernel.
func exprKey(fam byte, es []expr.Any) (string, error) {
	var b strings.Builder
	for _, e := range es {
		data, err := expr.Marshal(fam, e)
		if err != nil {
			return "", fmt.Errorf("encoding a %T expression: %w", e, err)
		}
		b.Write(data)
	}
	return b.String(), nil
}

func elemKey(e nftables.SetElement) string {
	return fmt.Sprintf("%x-%x-%v", e.Key, e.KeyEnd, e.IntervalEnd)
}

// baseText describes a base chain's header (or "regular chain").
func baseText(b *nftBase) string {
	if b == nil {
		return "regular chain"
	}
	return fmt.Sprintf("type %s hook %s priority %d policy accept", b.typ, b.hook, b.prio)
}

// chainBaseText describes a chain read from the kernel like baseText.
func chainBaseText(c *nftables.Chain) string {
	if c.Hooknum == nil {
		return "regular chain"
	}
	hooks := map[nftables.ChainHook]string{
		*nftables.ChainHookPrerouting: "prerouting", *nftables.ChainHookInput: "input",
		*nftables.ChainHookForward: "forward", *nftables.ChainHookOutput: "output",
		*nftables.ChainHookPostrouting: "postrouting",
	}
	hook, ok := hooks[*c.Hooknum]
	if !ok {
		hook = fmt.Sprintf("%d", *c.Hooknum)
	}
	prio := 0
	if c.Priority != nil {
		prio = int(*c.Priority)
	}
	policy := "accept"
	if c.Policy != nil && *c.Policy == nftables.ChainPolicyDrop {
		policy = "drop"
	}
	return fmt.Sprintf("type %s hook %s priority %d policy %s", c.Type, hook, prio, policy)
}

// nftMemberOf decodes an element of set s read from the kernel, the
// inverse of nftElem.
func nftMemberOf(s SetName, f Family, e nftables.SetElement) (Member, bool) {
	n := 4
	if f == IPv6 {
		n = 16
	}
	addr := func(b []byte) (netip.Addr, bool) {
		if len(b) < n {
			return netip.Addr{}, false
		}
		return netip.AddrFromSlice(b[:n])
	}
	k := e.Key
	switch s.Shape() {
	case ShapeAddr:
		a, ok := addr(k)
		return Addr(a), ok && len(k) == n
	case ShapePort:
		if len(k) != 2 {
			return Member{}, false
		}
		return Port(binary.BigEndian.Uint16(k)), true
	}
	a, ok := addr(k)
	if !ok || len(k) < n+8 {
		return Member{}, false
	}
	m := AddrPort(a, Protocol(k[n]), binary.BigEndian.Uint16(k[n+4:]))
	rest := k[n+8:]
	switch {
	case s == LBNoNodeAccess || s.Shape() == ShapeAddrPort:
		return m, len(rest) == 0 || s == LBNoNodeAccess && len(rest) == n
	case s.Shape() == ShapeAddrPortAddr:
		m.Addr2, ok = addr(rest)
		return m, ok && len(rest) == n
	}
	first, ok1 := addr(rest)
	if len(e.KeyEnd) != len(k) {
		return Member{}, false
	}
	last, ok2 := addr(e.KeyEnd[n+8:])
	if !ok1 || !ok2 {
		return Member{}, false
	}
	for bits := first.BitLen(); bits >= 0; bits-- {
		p := netip.PrefixFrom(first, bits)
		if lo, hi := prefixRange(p); lo == first && hi == last {
			m.Net = p
			return m, true
		}
	}
	return Member{}, false
}
