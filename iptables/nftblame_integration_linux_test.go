package iptables

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/internal/vm"
)

// A full sync whose batch the kernel refuses because of one rule names that
// rule (chain and nft text) and the modules its expressions need. A rule
// with an xtables match no kernel has stands for an expression whose
// module is missing (ErrNotSupported, naming xt_ipvskitnosuch); a rule
// looking up a set that does not exist is refused for another reason (not
// ErrNotSupported; fs.ErrNotExist, as the kernel's ENOENT says). Another
// program's table stays as it was, no probe table is left, and the next
// Apply without the bad rule works.
func TestIntegrationNFTablesNamesRefusedRule(t *testing.T) {
	for _, f := range []Family{IPv4, IPv6} {
		t.Run(f.String(), func(t *testing.T) {
			ns, b, fam, before := besideAnotherTable(t, f)

			for _, tc := range []struct {
				name, text, missing string
				exprs               []any
				notSupp, notExist   bool
				wantInMsg           string
			}{
				{name: "missing module", text: "xt match ipvskitnosuch",
					exprs:   []any{&expr.Match{Name: "ipvskitnosuch", Info: &xt.Unknown{}}},
					missing: "xt_ipvskitnosuch (through nft_compat)", notSupp: true,
					wantInMsg: `nftables: table ` + fam + ` ipvskit: chain services: rule "xt match ipvskitnosuch" refused (needs nf_tables, xt_ipvskitnosuch (through nft_compat)): module xt_ipvskitnosuch (through nft_compat) missing: no such file or directory`},
				{name: "missing set", text: "th dport @no-such-set accept",
					exprs:     []any{eLoad(true, 2, 2, 1), eLookup("no-such-set", 0), eVerdict("accept", "")},
					notExist:  true,
					wantInMsg: `nftables: table ` + fam + ` ipvskit: chain services: rule "th dport @no-such-set accept" refused (needs nf_tables): no such file or directory`},
			} {
				b.b.editChains = func(chains []nftChain) {
					for i := range chains {
						if chains[i].name == "services" {
							chains[i].rules = append(chains[i].rules, nftRule{text: tc.text, exprs: tc.exprs})
						}
					}
				}
				err := b.Apply(testCtx(t), sample(f, Options{}))
				b.b.editChains = nil
				t.Logf("%s: %v", tc.name, err)
				var re *RuleError
				if !errors.As(err, &re) || re.Chain != "services" || re.Rule != tc.text || re.Missing != tc.missing {
					t.Fatalf("%s: %#v; want a *RuleError naming chain services, rule %q, missing %q", tc.name, err, tc.text, tc.missing)
				}
				if !strings.Contains(err.Error(), tc.wantInMsg) {
					t.Errorf("%s: message\n%s\nwant it to contain\n%s", tc.name, err, tc.wantInMsg)
				}
				if errors.Is(err, ErrNotSupported) != tc.notSupp || errors.Is(err, fs.ErrNotExist) != tc.notExist {
					t.Errorf("%s: ErrNotSupported %v, fs.ErrNotExist %v; want %v, %v", tc.name,
						errors.Is(err, ErrNotSupported), errors.Is(err, fs.ErrNotExist), tc.notSupp, tc.notExist)
				}
				if w := testutil.RepeatedPrefix(err.Error()); w != "" {
					t.Errorf("%s: %q says %q twice", tc.name, err, w)
				}
				if after := ns.Exec(t, "nft", "list", "ruleset"); after != before {
					t.Fatalf("%s: the failed sync or its diagnosis changed the ruleset (-before +after):\n%s", tc.name, lineDiff(before, after))
				}
			}
			if err := b.Apply(testCtx(t), sample(f, Options{})); err != nil {
				t.Fatal(err)
			}
			otherTableIntact(t, ns, fam)
		})
	}
}

// besideAnotherTable makes a fresh namespace holding another program's
// table "other" (a chain with one rule) and an nftables back end of family f
// there. It returns them, nft's word for the family and the namespace's
// ruleset before anything of ours.
func besideAnotherTable(t *testing.T, f Family) (*testutil.NetNS, *NFTablesBackend, string, string) {
	t.Helper()
	ns := testutil.NewNetNS(t)
	b := newNFT(t, ns, f, 0)
	fam, _ := nftFamily(f)
	ns.Exec(t, "nft", "add table "+fam+" other; add chain "+fam+" other c; add rule "+fam+" other c meta mark 0x2 accept")
	return ns, b, fam, ns.Exec(t, "nft", "list", "ruleset")
}

// otherTableIntact fails t unless besideAnotherTable's table still has its
// rule.
func otherTableIntact(t *testing.T, ns *testutil.NetNS, fam string) {
	t.Helper()
	if out := ns.Exec(t, "nft", "list", "table", fam, "other"); !strings.Contains(out, "meta mark 0x00000002 accept") {
		t.Errorf("the other program's table changed:\n%s", out)
	}
}

// TestIntegrationNFTablesMissingModuleNamesRule applies the sample ruleset
// beside another program's table. In the VM rig (and on the host) nft_ct is
// there and it works; scripts/test also runs it in a guest booted without
// nft_ct (scripts/vmtest -without nft_ct), where the full sync must fail
// naming the rule that uses ct, in its chain, and the module, as
// ErrNotSupported, changing nothing.
func TestIntegrationNFTablesMissingModuleNamesRule(t *testing.T) {
	leftOut, err := vm.LeftOut()
	if err != nil {
		t.Fatal(err)
	}
	missing := slices.Contains(leftOut, "nft_ct")
	for _, f := range []Family{IPv4, IPv6} {
		t.Run(f.String(), func(t *testing.T) {
			ns, b, fam, before := besideAnotherTable(t, f)
			err := b.Apply(testCtx(t), sample(f, Options{}))
			t.Logf("nft_ct left out: %v; Apply: %v", missing, err)
			if !missing {
				if err != nil {
					t.Fatal(err)
				}
				otherTableIntact(t, ns, fam)
				return
			}
			var re *RuleError
			want := "ct state new " + fam + " daddr @ipvs-ips reject"
			if !errors.As(err, &re) || re.Chain != "ipvs-filter" || re.Rule != want || re.Missing != "nft_ct" ||
				!errors.Is(err, ErrNotSupported) || errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Apply without nft_ct: %v\nwant a *RuleError naming chain ipvs-filter, rule %q and module nft_ct, ErrNotSupported and not fs.ErrNotExist", err, want)
			}
			if w := testutil.RepeatedPrefix(err.Error()); w != "" {
				t.Errorf("%q says %q twice", err, w)
			}
			if after := ns.Exec(t, "nft", "list", "ruleset"); after != before {
				t.Fatalf("the failed sync changed the ruleset (-before +after):\n%s", lineDiff(before, after))
			}
		})
	}
}
