package iptables

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/ipvskit/ipvskit/internal/kerr"
	"github.com/ipvskit/ipvskit/ipset"
)

// iptBackend is the iptables back end's logic, over a runner for the
// binaries and a setClient for the ipsets, so that unit tests can drive it
// with fakes.
type iptBackend struct {
	fam    Family
	flavor Flavor
	names  *iptNames
	sets   setClient
	run    runner
	closer func() error

	syncEngine
	// lastText is the rendered rules of the engine's last.
	lastText string
	// jumps records that the jump rules were ensured.
	jumps bool
	// known holds the chains and ipsets this back end wrote since its last
	// Cleanup (keys from knownChain and knownSet): its own even when their
	// mark is gone (someone flushed a chain, a restore failed after a set
	// was made), so that Repair and Cleanup still take them back.
	known map[string]bool
	// adopting, until the first full sync succeeds, takes unmarked objects
	// of the back end's (kube-proxy's) names as its own
	// (IPTablesConfig.AdoptKubeProxy).
	adopting bool
	// answers keeps Probe's answer per match and target: the kernel is
	// asked once per back end.
	answers kerr.Probes

	// fail, when set (by tests), is called before each step; an error
	// from it aborts the sync there, as a kernel or tool failure would.
	fail func(step string) error
}

func (b *iptBackend) step(name string) error {
	if b.fail != nil {
		return b.fail(name)
	}
	return nil
}

func (b *iptBackend) close() error {
	var err error
	if b.sets != nil {
		err = b.sets.Close()
	}
	if b.closer != nil {
		err = errors.Join(err, b.closer())
	}
	b.answers.Forget() // a closed back end's Probe asks again, and fails
	return err
}

func (b *iptBackend) kind() string            { return "iptables" }
func (b *iptBackend) family() Family          { return b.fam }
func (b *iptBackend) limits(r *Ruleset) error { return checkIPSetLimits(r) }

// writeFull reads the kernel back once and refuses (a *ForeignError) if a
// chain or ipset it would write exists without its mark; then it replaces
// every ipset atomically, rewrites the owned chains (the owner chain with
// them) and ensures the jump rules if that was not done yet (always, for
// Repair).
func (b *iptBackend) writeFull(ctx context.Context, r *Ruleset, repair bool) error {
	if repair {
		b.jumps = false
	}
	own, err := b.readOwnership(ctx, []Flavor{b.flavor}, true, false)
	if err != nil {
		return err
	}
	for _, s := range Sets() {
		if !s.isIPSet() {
			continue
		}
		if err := b.step("ipset " + s.String()); err != nil {
			return err
		}
		spec := ipsetSpec(b.names, b.fam, s)
		start := time.Now()
		err := b.sets.Replace(ctx, spec, ipsetEntries(r.Members(s)))
		b.stats.SetsTime += time.Since(start)
		b.know(knownSet(spec.Name)) // made or rewritten now, perhaps half way
		if err != nil {
			return fmt.Errorf("iptables: replacing ipset %s: %w", spec.Name, err)
		}
		b.stats.SetsReplaced++
		b.stats.ElementsAdded += r.Len(s)
	}
	text := renderIPTablesText(r, b.names)
	if err := b.restore(ctx, text); err != nil {
		return err
	}
	for _, table := range []string{"nat", "filter"} {
		for _, c := range b.names.chains(table) {
			b.know(knownChain(b.flavor, table, c))
		}
	}
	if !b.jumps {
		if err := b.ensureJumps(ctx, own.saves[b.flavor]); err != nil {
			return err
		}
		b.jumps = true
	}
	if b.adopting {
		if err := b.dropAdoptedJumps(ctx, own); err != nil {
			return err
		}
		b.adopting = false
	}
	b.lastText = text
	return nil
}

// writeDeltas adds new set members, rewrites the owned chains if their
// rules changed, then deletes old members.
func (b *iptBackend) writeDeltas(ctx context.Context, old, r *Ruleset, d *setDeltas) error {
	rulesChanged := false
	for _, s := range Sets() {
		// The rules change only when a set turns empty or non-empty, or
		// with the members of LBNoNodeAccess (one rule each).
		if (len(d[s].Add)+len(d[s].Del) > 0 && s == LBNoNodeAccess) || (old.Len(s) == 0) != (r.Len(s) == 0) {
			rulesChanged = true
		}
	}
	// Every set's additions in one call (one round trip), as its deletions
	// below: per set, an Add would cost a header read and a batch each.
	if err := b.updateSets(ctx, d.adds(), "add"); err != nil {
		return err
	}
	text := b.lastText
	if rulesChanged {
		if text = renderIPTablesText(r, b.names); text != b.lastText {
			if err := b.restore(ctx, text); err != nil {
				return err
			}
		}
	}
	if err := b.updateSets(ctx, d.dels(), "del"); err != nil {
		return err
	}
	b.lastText = text
	return nil
}

// restore feeds text to iptables-restore --noflush: each table is replaced
// atomically, and only the chains it declares are flushed.
func (b *iptBackend) restore(ctx context.Context, text string) error {
	if err := b.step("restore"); err != nil {
		return err
	}
	bin := b.flavor.binary(b.fam, "restore")
	start := time.Now()
	_, err := b.run.run(ctx, []byte(text), bin, "-w", "--noflush")
	b.stats.RulesTime += time.Since(start)
	b.stats.RuleWrites++
	if err != nil {
		return restoreError(bin, b.fam, text, err)
	}
	return nil
}

// saved is what iptables-save printed, per table: chain names and rules.
type saved map[string]*savedTable

type savedTable struct {
	chains map[string]bool
	rules  map[string]bool
	// byChain holds each chain's rule lines, in order.
	byChain map[string][]string
}

func parseSave(out string) saved {
	s := saved{}
	var cur *savedTable
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			cur = &savedTable{chains: map[string]bool{}, rules: map[string]bool{}, byChain: map[string][]string{}}
			s[line[1:]] = cur
		case cur == nil:
		case strings.HasPrefix(line, ":"):
			name, _, _ := strings.Cut(line[1:], " ")
			cur.chains[name] = true
		case strings.HasPrefix(line, "-A "):
			cur.rules[line] = true
			chain, _, _ := strings.Cut(line[3:], " ")
			cur.byChain[chain] = append(cur.byChain[chain], line)
		}
	}
	return s
}

// byChainOrEmpty returns the table's rules by chain (none if the table is
// not there).
func (t *savedTable) byChainOrEmpty() map[string][]string {
	if t == nil {
		return nil
	}
	return t.byChain
}

func (s saved) hasRule(table, line string) bool {
	t := s[table]
	return t != nil && t.rules[line]
}

func (s saved) hasChain(table, chain string) bool {
	t := s[table]
	return t != nil && t.chains[chain]
}

func (b *iptBackend) save(ctx context.Context, fl Flavor) (saved, error) {
	bin := fl.binary(b.fam, "save")
	out, err := b.run.run(ctx, nil, bin)
	if err != nil {
		return nil, fmt.Errorf("iptables: %s: %w", bin, err)
	}
	return parseSave(string(out)), nil
}

// ensureJumps inserts the jump rules missing from s (iptables-save of the
// back end's flavor, read before the sync) at position 1, in kube-proxy's
// order, in one restore.
func (b *iptBackend) ensureJumps(ctx context.Context, s saved) error {
	if err := b.step("jumps"); err != nil {
		return err
	}
	defer func(start time.Time) { b.stats.RulesTime += time.Since(start) }(time.Now())
	var text strings.Builder
	for _, table := range []string{"nat", "filter"} {
		var lines []string
		for _, j := range b.names.jumpRules() {
			if j.table == table && !s.hasRule(table, j.line()) {
				lines = append(lines, fmt.Sprintf("-I %s 1 %s", j.chain, j.spec))
			}
		}
		if len(lines) > 0 {
			fmt.Fprintf(&text, "*%s\n%s\nCOMMIT\n", table, strings.Join(lines, "\n"))
		}
	}
	if text.Len() == 0 {
		return nil
	}
	bin := b.flavor.binary(b.fam, "restore")
	b.stats.RuleWrites++
	if _, err := b.run.run(ctx, []byte(text.String()), bin, "-w", "--noflush"); err != nil {
		return fmt.Errorf("inserting jump rules: %w", restoreError(bin, b.fam, text.String(), err))
	}
	return nil
}

// removeOwn is cleanupMarked, after which the back end knows of nothing it
// wrote.
func (b *iptBackend) removeOwn(ctx context.Context) error {
	b.jumps = false
	if err := b.cleanupMarked(ctx); err != nil {
		return err
	}
	b.known = nil
	return nil
}

// know records that the back end wrote the object of key k.
func (b *iptBackend) know(k string) {
	if b.known == nil {
		b.known = map[string]bool{}
	}
	b.known[k] = true
}

// cleanupMarked removes, in both flavors (as far as their binaries exist),
// the jump rules that carry the mark and the owned chains that start with
// the marker, the owner chain last, then the ipsets the owner chain
// referenced (and those the back end knows it wrote).
// It reads everything first and changes nothing if an object of its names
// exists without its mark (a *ForeignError). Missing objects are not
// errors.
func (b *iptBackend) cleanupMarked(ctx context.Context) error {
	n := b.names
	own, err := b.readOwnership(ctx, []Flavor{FlavorLegacy, FlavorNFT}, false, true)
	if err != nil {
		return err
	}
	for _, fl := range []Flavor{FlavorLegacy, FlavorNFT} {
		s, ok := own.saves[fl]
		if !ok {
			continue
		}
		var text strings.Builder
		for _, table := range []string{"nat", "filter"} {
			var del, decl, drop []string
			for chain, lines := range s[table].byChainOrEmpty() {
				if own.chains[fl][table+" "+chain] {
					continue
				}
				for _, l := range lines {
					if own.chains[fl][table+" "+ruleTarget(l)] && strings.Contains(l, " --comment "+saveQuote(n.mark)+" ") {
						del = append(del, "-D "+l[len("-A "):])
					}
				}
			}
			slices.Sort(del)
			for _, c := range n.chains(table) { // the owner chain last
				if own.chains[fl][table+" "+c] {
					decl = append(decl, ":"+c+" - [0:0]")
					drop = append(drop, "-X "+c)
				}
			}
			if len(del)+len(decl) == 0 {
				continue
			}
			fmt.Fprintf(&text, "*%s\n", table)
			for _, l := range append(append(del, decl...), drop...) {
				text.WriteString(l + "\n")
			}
			text.WriteString("COMMIT\n")
		}
		if text.Len() == 0 {
			continue
		}
		bin := fl.binary(b.fam, "restore")
		if _, err := b.run.run(ctx, []byte(text.String()), bin, "-w", "--noflush"); err != nil {
			return fmt.Errorf("removing owned chains: %w", restoreError(bin, b.fam, text.String(), err))
		}
	}
	if b.sets == nil {
		return nil
	}
	var errs []error
	for _, s := range Sets() {
		name := n.ipset(s, b.fam)
		if _, ok := own.sets[name]; !ok {
			continue
		}
		if err := b.sets.Destroy(ctx, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("iptables: destroying ipset %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// pickFlavor decides FlavorAuto: the flavor whose tables hold rules (legacy
// first, as a host that still has legacy rules is using legacy), else what
// the plain iptables binary reports, else nft.
func pickFlavor(ctx context.Context, run runner, fam Family) (Flavor, error) {
	b := &iptBackend{fam: fam, run: run}
	count := func(fl Flavor) int {
		s, err := b.save(ctx, fl)
		if err != nil {
			return -1
		}
		n := 0
		for _, t := range s {
			n += len(t.rules)
		}
		return n
	}
	legacy, nft := count(FlavorLegacy), count(FlavorNFT)
	switch {
	case legacy < 0 && nft < 0:
		return 0, fmt.Errorf("iptables: neither %s nor %s runs: %w", FlavorLegacy.binary(fam, "save"), FlavorNFT.binary(fam, "save"), ErrNotSupported)
	case legacy > 0 && legacy >= nft:
		return FlavorLegacy, nil
	case nft > 0 || legacy < 0:
		return FlavorNFT, nil
	case nft < 0:
		return FlavorLegacy, nil
	}
	plain := "iptables"
	if fam == IPv6 {
		plain = "ip6tables"
	}
	if out, err := run.run(ctx, nil, plain, "--version"); err == nil && strings.Contains(string(out), "legacy") {
		return FlavorLegacy, nil
	}
	return FlavorNFT, nil
}

// updateSets sends every ipset's changes in d in one ipset.Update; verb
// ("add" for d.adds(), "del" for d.dels()) names the failure-injection
// steps, one per set, and the error.
func (b *iptBackend) updateSets(ctx context.Context, d setDeltas, verb string) error {
	var batch []ipset.Change
	for _, s := range Sets() {
		if !s.isIPSet() || len(d[s].Add)+len(d[s].Del) == 0 {
			continue
		}
		if err := b.step("ipset " + verb + " " + s.String()); err != nil {
			return err
		}
		ch := ipset.Change{Set: ipsetSpec(b.names, b.fam, s)}
		if len(d[s].Add) > 0 {
			ch.Add = ipsetEntries(d[s].Add)
		}
		if len(d[s].Del) > 0 {
			ch.Del = ipsetEntries(d[s].Del)
		}
		batch = append(batch, ch)
	}
	if len(batch) == 0 {
		return nil
	}
	start := time.Now()
	err := b.sets.Update(ctx, batch...)
	b.stats.SetsTime += time.Since(start)
	for _, ch := range batch { // sent, even if the kernel refused some
		b.stats.ElementsAdded += len(ch.Add)
		b.stats.ElementsDeleted += len(ch.Del)
	}
	if err != nil {
		return fmt.Errorf("iptables: ipset %s: %w", verb, err)
	}
	return nil
}

// render is IPTablesBackend.Render: r's owned chains with the back end's names.
func (b *iptBackend) render(r *Ruleset) (string, error) {
	if err := r.Validate(); err != nil {
		return "", err
	}
	return renderIPTablesText(r, b.names), nil
}
