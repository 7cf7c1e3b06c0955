package iptables_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
	. "github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/internal/contract"
)

// The iptables back end meets the contract that iptablestest.Fake is held
// to, in each flavor and family, in a fresh namespace per expectation;
// iptables-save and ipset(8) of the same flavor are the oracles.
func TestIntegrationIPTablesContract(t *testing.T) {
	for _, fl := range Flavors {
		for _, f := range []Family{IPv4, IPv6} {
			t.Run(fl.String()+"/"+f.String(), func(t *testing.T) {
				contract.Run(t, func(t *testing.T) contract.World {
					ns := testutil.NewNetNS(t)
					b, err := NewIPTables(&IPTablesConfig{NetNS: ns.Handle(), Family: f, Flavor: fl})
					if errors.Is(err, ErrNotSupported) {
						testutil.Missing(t, fl.Binary(f, "restore")+" and ipset", err)
					}
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { b.Close() })
					return iptWorld(ns, b, f)
				})
			})
		}
	}
}

func iptWorld(ns *testutil.NetNS, b *IPTablesBackend, f Family) contract.World {
	fl := b.Flavor()
	restore := func(t *testing.T, text string) {
		t.Helper()
		if _, err := ns.TryExec(t, []byte(text), fl.Binary(f, "restore"), "--noflush"); err != nil {
			t.Fatalf("%s: %v\n%s", fl.Binary(f, "restore"), err, text)
		}
	}
	ipsetFam, host, other := "inet", "198.18.9.1/32", "198.18.9.2"
	if f == IPv6 {
		ipsetFam, host, other = "inet6", "2001:db8:9::1/128", "2001:db8:9::2"
	}
	// snapshot is every line of iptables-save and ipset save that
	// mentions one of names.
	snapshot := func(t *testing.T, names ...string) string {
		t.Helper()
		var out []string
		for _, l := range strings.Split(ns.Exec(t, fl.Binary(f, "save"))+ns.Exec(t, "ipset", "save"), "\n") {
			if !strings.HasPrefix(l, "#") && slices.ContainsFunc(names, func(n string) bool { return strings.Contains(l, n) }) {
				out = append(out, strings.TrimSpace(l))
			}
		}
		return strings.Join(out, "\n")
	}
	keep := func(t *testing.T, names ...string) func(t *testing.T) {
		t.Helper()
		before := snapshot(t, names...)
		if before == "" {
			t.Fatal("found none of the objects just made")
		}
		return func(t *testing.T) {
			t.Helper()
			if after := snapshot(t, names...); after != before {
				t.Fatalf("other programs' objects changed (-before +after):\n%s", LineDiff(before, after))
			}
		}
	}
	return contract.World{
		Backend: b,
		Family:  f,
		Holds: func(t *testing.T, r *Ruleset) {
			t.Helper()
			save := ns.Exec(t, fl.Binary(f, "save"))
			want := ""
			if r != nil {
				var err error
				if want, err = RenderIPTables(r, nil); err != nil {
					t.Fatal(err)
				}
			}
			if got := OwnedLines(save); got != want {
				t.Fatalf("%s (-want +got):\n%s", fl.Binary(f, "save"), LineDiff(want, got))
			}
			if r == nil {
				for _, l := range strings.Split(ns.Exec(t, "ipset", "list", "-n"), "\n") {
					if _, ok := OwnedIPSets(f)[l]; ok {
						t.Fatalf("ipset %s exists", l)
					}
				}
				return
			}
			if got, want := IPSetMembers(t, ns, f), WantIPSetMembers(r); !slices.Equal(got, want) {
				t.Fatalf("ipset members (-want +got):\n%s", LineDiff(strings.Join(want, "\n"), strings.Join(got, "\n")))
			}
		},
		DropMember: func(t *testing.T, s SetName, m Member) {
			ns.Exec(t, "ipset", "del", OwnedIPSet(s, f), m.String())
		},
		// Another program's chains, jump rules and ipsets: kube-proxy's
		// names, a chain with the instance's prefix that it never made,
		// another instance's marked chain.
		Others: func(t *testing.T) func(t *testing.T) {
			restore(t, fmt.Sprintf(`*nat
:KUBE-SERVICES - [0:0]
:IPVSKIT-EXTRA - [0:0]
:OTHER-SERVICES - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A PREROUTING -j OTHER-SERVICES
-A KUBE-SERVICES -d %[1]s -j RETURN
-A IPVSKIT-EXTRA -d %[1]s -j RETURN
-A OTHER-SERVICES -m comment --comment "ipvskit:other" -j RETURN
COMMIT
*filter
:KUBE-FIREWALL - [0:0]
-A INPUT -j KUBE-FIREWALL
-A KUBE-FIREWALL -s %[1]s -j DROP
COMMIT
`, host))
			for _, args := range [][]string{
				{"create", "KUBE-CLUSTER-IP", "hash:ip,port", "family", ipsetFam},
				{"add", "KUBE-CLUSTER-IP", other + ",tcp:80"},
				{"create", "IPVSKIT-EXTRA", "hash:ip", "family", ipsetFam},
				{"add", "IPVSKIT-EXTRA", other},
			} {
				ns.Exec(t, "ipset", args...)
			}
			return keep(t, "KUBE-", "IPVSKIT-EXTRA", "OTHER-SERVICES")
		},
		// An owned chain's name without the mark.
		Squat: func(t *testing.T) func(t *testing.T) {
			restore(t, fmt.Sprintf("*nat\n:IPVSKIT-SERVICES - [0:0]\n-A IPVSKIT-SERVICES -d %s -j RETURN\nCOMMIT\n", host))
			return keep(t, "IPVSKIT-")
		},
	}
}
