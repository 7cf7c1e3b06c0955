package iptables

import (
	"errors"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/nsfd/nsfdtest"
	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/vishvananda/netns"
)

// invalidNetNS accepts the *ValidationError on field's NetNS.
func invalidNetNS(field string) func(error) bool {
	return func(err error) bool {
		var ve *ValidationError
		return errors.As(err, &ve) && ve.Field == field+".NetNS"
	}
}

// TestIntegrationNetNSRuleIPTables checks the documented values of
// IPTablesConfig.NetNS: the ruleset lands in the namespace the rule names,
// and another program's chain, in both namespaces, is left alone.
func TestIntegrationNetNSRuleIPTables(t *testing.T) {
	here, there := testutil.NewNetNS(t), testutil.NewNetNS(t)
	newIPT(t, here, IPv4, FlavorNFT) // skips without the binaries or ipset
	const theirs = "-A OTHER-PROG -s 198.18.7.7/32 -j RETURN"
	for _, ns := range []*testutil.NetNS{here, there} {
		if _, err := ns.TryExec(t, []byte("*nat\n:OTHER-PROG - [0:0]\n"+theirs+"\nCOMMIT\n"), "iptables-nft-restore", "--noflush"); err != nil {
			t.Fatal(err)
		}
	}
	r := sampleFor(t, IPv4, FlavorNFT, Options{})
	nsfdtest.Rule(t, here, there,
		func(ns netns.NsHandle) (*IPTablesBackend, error) {
			return NewIPTables(&IPTablesConfig{NetNS: ns, Family: IPv4, Flavor: FlavorNFT})
		},
		func(t *testing.T, b *IPTablesBackend, in, notIn *testutil.NetNS) {
			if err := b.Apply(testCtx(t), r); err != nil {
				t.Fatal(err)
			}
			checkIPT(t, in, b, r)
			if got := ownedLines(notIn.Exec(t, "iptables-nft-save")); got != "" {
				t.Errorf("the other namespace has the back end's rules:\n%s", got)
			}
			if err := b.Cleanup(testCtx(t)); err != nil {
				t.Fatal(err)
			}
		},
		invalidNetNS("IPTablesConfig"))
	for _, ns := range []*testutil.NetNS{here, there} {
		if save := ns.Exec(t, "iptables-nft-save", "-t", "nat"); !strings.Contains(save, theirs) {
			t.Errorf("another program's chain is gone:\n%s", save)
		}
	}
}

// TestIntegrationNetNSRuleNFTables is the same for NFTablesConfig.NetNS,
// with another program's table beside the back end's.
func TestIntegrationNetNSRuleNFTables(t *testing.T) {
	here, there := testutil.NewNetNS(t), testutil.NewNetNS(t)
	newNFT(t, here, IPv4, 0) // skips without nf_tables
	for _, ns := range []*testutil.NetNS{here, there} {
		ns.Exec(t, "nft", "add table ip otherprog; add chain ip otherprog c; add rule ip otherprog c ip saddr 198.18.7.7 return")
	}
	r := sample(IPv4, Options{})
	nsfdtest.Rule(t, here, there,
		func(ns netns.NsHandle) (*NFTablesBackend, error) {
			return NewNFTables(&NFTablesConfig{NetNS: ns, Family: IPv4})
		},
		func(t *testing.T, b *NFTablesBackend, in, notIn *testutil.NetNS) {
			if err := b.Apply(testCtx(t), r); err != nil {
				t.Fatal(err)
			}
			if got := in.Exec(t, "nft", "list", "tables"); !strings.Contains(got, "table ip ipvskit") {
				t.Errorf("the namespace the back end works in has no table ip ipvskit:\n%s", got)
			}
			if got := notIn.Exec(t, "nft", "list", "tables"); strings.Contains(got, "table ip ipvskit") {
				t.Errorf("the other namespace has table ip ipvskit:\n%s", got)
			}
			if err := b.Cleanup(testCtx(t)); err != nil {
				t.Fatal(err)
			}
		},
		invalidNetNS("NFTablesConfig"))
	for _, ns := range []*testutil.NetNS{here, there} {
		if got := ns.Exec(t, "nft", "list", "table", "ip", "otherprog"); !strings.Contains(got, "ip saddr 198.18.7.7 return") {
			t.Errorf("another program's table changed:\n%s", got)
		}
	}
}
