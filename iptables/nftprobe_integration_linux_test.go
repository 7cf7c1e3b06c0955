package iptables

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
	"github.com/ipvskit/ipvskit/internal/testutil"
)

// nosuch queues a rule with an xtables match no kernel has: the kernel
// refuses it with ENOENT, as it refuses an expression whose module is
// missing.
func nosuch(c *nftables.Conn, t *nftables.Table, chain string) {
	c.AddRule(&nftables.Rule{Table: t, Chain: &nftables.Chain{Name: chain, Table: t},
		Exprs: []expr.Any{&expr.Match{Name: "ipvskitnosuch", Info: &xt.Unknown{}}}})
}

// Every probe is a batch this kernel (which has every feature) accepts:
// a probe that failed for another reason would never name its module.
func TestIntegrationNFTablesProbesPass(t *testing.T) {
	for _, f := range []Family{IPv4, IPv6} {
		ns := testutil.NewNetNS(t)
		b := newNFT(t, ns, f, 0)
		for _, p := range nftProbes() {
			if err := b.b.probe(testCtx(t), p); err != nil {
				t.Errorf("%v: probe of the %s: %v", f, p.kind, err)
			}
		}
		if out := ns.Exec(t, "nft", "list", "tables"); out != "" {
			t.Errorf("%v: probe tables left: %s", f, out)
		}
	}
}

// On this kernel every real feature is there, so the diagnosis must pass
// them all and name the one feature the test makes impossible; the
// probe tables are gone afterwards and the error wraps ErrNotSupported.
func TestIntegrationNFTablesNamesMissingModule(t *testing.T) {
	for _, f := range []Family{IPv4, IPv6} {
		t.Run(f.String(), func(t *testing.T) {
			ns := testutil.NewNetNS(t)
			b := newNFT(t, ns, f, 0)
			b.b.probes = append(nftProbes(), nftProbe{"test feature", func(c *nftables.Conn, t *nftables.Table, f Family) {
				c.AddChain(&nftables.Chain{Name: "c", Table: t})
				nosuch(c, t, "c")
			}})
			b.b.beforeFlush = func(c *nftables.Conn, batch int) { nosuch(c, b.b.table, "services") }
			before := ns.Exec(t, "nft", "list", "ruleset")
			err := b.Apply(testCtx(t), sample(f, Options{}))
			b.b.beforeFlush = nil
			if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "refuses the test feature") ||
				!strings.Contains(err.Error(), "module nf_tables missing") {
				t.Fatalf("want an ErrNotSupported naming the test feature, got %v", err)
			}
			if w := testutil.RepeatedPrefix(err.Error()); w != "" || strings.Count(err.Error(), "nftables:") != 1 {
				t.Errorf("%q repeats a prefix", err)
			}
			if after := ns.Exec(t, "nft", "list", "ruleset"); after != before {
				t.Fatalf("the diagnosis left something behind (-before +after):\n%s", lineDiff(before, after))
			}
			// With the real probes alone (all pass here), the kernel's own
			// error comes back unchanged.
			b.b.probes = nftProbes()
			b.b.beforeFlush = func(c *nftables.Conn, batch int) { nosuch(c, b.b.table, "services") }
			err = b.Apply(testCtx(t), sample(f, Options{}))
			b.b.beforeFlush = nil
			if err == nil || errors.Is(err, ErrNotSupported) {
				t.Fatalf("with every feature present: want the kernel's error, got %v", err)
			}
			if err := b.Apply(testCtx(t), sample(f, Options{})); err != nil {
				t.Fatal(err)
			}
		})
	}
}
