package iptables

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// blameRule finds the rule of r's table that the kernel refuses, after a
// full sync's batch failed with cause (ENOENT or EOPNOTSUPP), and returns
// a *RuleError naming it, or nil if no rule is refused on its own (then
// the failure is a set's or a base chain's, which diagnose looks for).
//
// The library's Flush returns one error for the whole batch, naming only
// the message type (NFT_MSG_NEWRULE); its map from sequence numbers to the
// messages it queued is its own, and the numbers come from the socket's
// counter, so mapping them back here would depend on how many messages
// each library call queues. Instead the rules are sent again, one per
// batch, into a throw-away table holding the same sets (empty) and chains
// (all regular: a base chain's type and hook are diagnose's business). The
// first rule the kernel refuses alone is the culprit, by the kernel's own
// verdict. Each of its expressions that a module provides is then sent
// alone, which tells a missing module (ErrNotSupported) from another
// refusal, such as a set that does not exist. It costs a round trip per
// rule, and only after a failure.
func (b *nftBackend) blameRule(ctx context.Context, r *Ruleset) error {
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	t := &nftables.Table{Name: "ipvskit-probe-" + hex.EncodeToString(suffix[:]), Family: b.table.Family}
	f := b.cfg.Family
	chains := b.chains(r, nil)
	c := b.conn
	c.AddTable(t)
	for _, s := range Sets() {
		_ = c.AddSet(nftSetSpec(t, f, s, ""), nil)
	}
	made := make([]*nftables.Chain, len(chains))
	for i, ch := range chains {
		made[i] = c.AddChain(&nftables.Chain{Name: ch.name, Table: t})
	}
	setup := b.bounded(ctx, c.Flush)
	defer func() {
		// Removed even when ctx has ended meanwhile.
		c.AddTable(t)
		c.DelTable(t)
		_ = b.bounded(context.WithoutCancel(ctx), c.Flush)
	}()
	if setup != nil {
		return nil
	}
	for i, ch := range chains {
		for _, rl := range ch.rules {
			if ctx.Err() != nil {
				return nil
			}
			c.AddRule(&nftables.Rule{Table: t, Chain: made[i], Exprs: exprs(rl.exprs)})
			err := b.bounded(ctx, c.Flush)
			if err == nil {
				continue
			}
			if ctx.Err() != nil {
				return nil
			}
			fam, _ := nftFamily(f)
			e := &RuleError{Table: fam + " " + b.table.Name, Chain: ch.name, Rule: rl.text, Modules: []string{"nf_tables"}, Err: err}
			for _, x := range rl.exprs {
				m := exprModule(x, f)
				if m == "" || slices.Contains(e.Modules, m) {
					continue
				}
				e.Modules = append(e.Modules, m)
				c.AddRule(&nftables.Rule{Table: t, Chain: made[i], Exprs: exprs([]any{x})})
				if e.Missing == "" && missingFeature(b.bounded(ctx, c.Flush)) {
					e.Missing = m
				}
			}
			return e
		}
	}
	return nil
}

// exprModule is the module that provides expression x, beyond nf_tables
// itself (nftmodules.go), or "" for one of nf_tables' own.
func exprModule(x any, f Family) string {
	switch x := x.(type) {
	case *expr.Ct:
		return nftModule(featCt, f)
	case *expr.Fib:
		return nftModule(featFib, f)
	case *expr.Masq:
		return nftModule(featMasquerade, f)
	case *expr.Reject:
		return nftModule(featReject, f)
	case *expr.Match:
		return "xt_" + x.Name + " (through nft_compat)"
	case *expr.Target:
		return "xt_" + x.Name + " (through nft_compat)"
	}
	return ""
}

// chains is the table's chains for r (nftChains), as the tests' editChains
// changes them.
func (b *nftBackend) chains(r *Ruleset, ids setRefs) []nftChain {
	chains := nftChains(r, ids)
	if b.editChains != nil {
		b.editChains(chains)
	}
	return chains
}
