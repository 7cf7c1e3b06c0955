package iptables

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"
)

// nftProbe queues, into a throw-away table t of family f, the objects that
// need one kernel feature (and nothing else the probes before it have not
// already shown to work).
type nftProbe struct {
	kind string
	add  func(c *nftables.Conn, t *nftables.Table, f Family)
}

// missingFeature reports whether err is how the kernel refuses an
// object whose module is missing.
func missingFeature(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP)
}

// nftProbes are the features the table uses, in the order they are tried.
func nftProbes() []nftProbe {
	set := func(s SetName) func(c *nftables.Conn, t *nftables.Table, f Family) {
		return func(c *nftables.Conn, t *nftables.Table, f Family) {
			_ = c.AddSet(nftSetSpec(t, f, s, ""), nil)
		}
	}
	rule := func(es ...any) func(c *nftables.Conn, t *nftables.Table, f Family) {
		return func(c *nftables.Conn, t *nftables.Table, f Family) {
			ch := c.AddChain(&nftables.Chain{Name: "c", Table: t})
			c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: exprs(es)})
		}
	}
	base := func(typ nftables.ChainType, hook *nftables.ChainHook) func(c *nftables.Conn, t *nftables.Table, f Family) {
		return func(c *nftables.Conn, t *nftables.Table, f Family) {
			c.AddChain(&nftables.Chain{Name: "b", Table: t, Type: typ, Hooknum: hook, Priority: nftables.ChainPriorityRef(0)})
		}
	}
	return []nftProbe{
		{featTable, func(*nftables.Conn, *nftables.Table, Family) {}},
		{featSetHash, set(ClusterIPSet)},
		{featSetBitmap, set(NodePortTCP)},
		{featSetPipapo, set(LoadBalancerSourceCIDR)},
		{featChainBase, base(nftables.ChainTypeFilter, nftables.ChainHookInput)},
		{featChainNAT, base(nftables.ChainTypeNAT, nftables.ChainHookPostrouting)},
		{featCore, func(c *nftables.Conn, t *nftables.Table, f Family) {
			s := nftSetSpec(t, f, NodePortTCP, "")
			_ = c.AddSet(s, nil)
			b := &nftBuilder{f: f, ids: setRefs{NodePortTCP: s.ID}}
			rule(append(append(b.portLookup(TCP, NodePortTCP).exprs, markOp(1, false).exprs...),
				eHton(1, 1, 2), eVerdict("accept", ""))...)(c, t, f)
		}},
		{featCt, rule(ctStateNew().exprs...)},
		{featFib, rule(fibLocal(false, false).exprs...)},
		{featMasquerade, rule(eMasq(true))},
		{featReject, func(c *nftables.Conn, t *nftables.Table, f Family) {
			rule((&nftBuilder{f: f}).reject().exprs...)(c, t, f)
		}},
	}
}

// diagnose runs after a batch failed with a missing-feature errno: it tries
// each feature alone in a throw-away table (named ipvskit-probe-<random>,
// always deleted) in the back end's namespace, and returns an error that
// wraps ErrNotSupported and names the first feature refused and its module,
// or cause unchanged if every feature works.
func (b *nftBackend) diagnose(ctx context.Context, cause error) error {
	for _, p := range b.probes {
		if ctx.Err() != nil {
			return cause
		}
		if err := b.probeFeature(ctx, p); errors.Is(err, ErrNotSupported) {
			// cause says "nftables:" and what was being done already.
			return fmt.Errorf("%w: the kernel refuses the %s: %w: module %s missing",
				cause, p.kind, ErrNotSupported, nftModule(p.kind, b.cfg.Family))
		}
	}
	return cause
}

// probe sends p's objects in a throw-away table, then deletes the table,
// and returns the kernel's answer to the first batch.
func (b *nftBackend) probe(ctx context.Context, p nftProbe) error {
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	t := &nftables.Table{Name: "ipvskit-probe-" + hex.EncodeToString(suffix[:]), Family: b.table.Family}
	b.conn.AddTable(t)
	p.add(b.conn, t, b.cfg.Family)
	err := b.bounded(ctx, b.conn.Flush)
	b.conn.AddTable(t)
	b.conn.DelTable(t)
	if derr := b.bounded(ctx, b.conn.Flush); derr != nil {
		return errors.Join(err, fmt.Errorf("deleting the probe table %s: %w", t.Name, derr))
	}
	return err
}
