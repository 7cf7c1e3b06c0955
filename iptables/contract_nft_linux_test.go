package iptables_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
	. "github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/internal/contract"
)

// The nftables back end meets the contract that iptablestest.Fake is held
// to, in a fresh namespace per expectation, in both families; nft(8) is
// the oracle.
func TestIntegrationNFTablesContract(t *testing.T) {
	for _, f := range []Family{IPv4, IPv6} {
		t.Run(f.String(), func(t *testing.T) {
			contract.Run(t, func(t *testing.T) contract.World {
				ns := testutil.NewNetNS(t)
				b, err := NewNFTables(&NFTablesConfig{NetNS: ns.Handle(), Family: f})
				if errors.Is(err, ErrNotSupported) {
					testutil.Missing(t, "nf_tables", err)
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.Close() })
				return nftWorld(ns, b, f)
			})
		})
	}
}

func nftWorld(ns *testutil.NetNS, b *NFTablesBackend, f Family) contract.World {
	fam, other, addr := "ip", "ip6", "198.18.9.1"
	if f == IPv6 {
		fam, other, addr = "ip6", "ip", "2001:db8:9::1"
	}
	return contract.World{
		Backend: b,
		Family:  f,
		Holds: func(t *testing.T, r *Ruleset) {
			t.Helper()
			if r == nil {
				if out, err := ns.TryExec(t, nil, "nft", "list", "table", fam, DefaultTable); err == nil {
					t.Fatalf("table %s %s exists:\n%s", fam, DefaultTable, out)
				}
				return
			}
			if got, want := ListTable(t, ns, f, DefaultTable), ScriptListing(t, r); got != want {
				t.Fatalf("nft list table (-want +got):\n%s", LineDiff(want, got))
			}
		},
		DropMember: func(t *testing.T, s SetName, m Member) {
			ns.Exec(t, "nft", "delete", "element", fam, DefaultTable, s.String(), "{ "+NFTElement(s, m)+" }")
		},
		// Another program's tables: the instance's name in the other nft
		// families (inet, and the other address family's table marked as
		// the same instance's, as its other back end makes it), and
		// kube-proxy's table.
		Others: func(t *testing.T) func(t *testing.T) {
			otherAddr := "2001:db8:9::1"
			if f == IPv6 {
				otherAddr = "198.18.9.1"
			}
			daddr := "ip daddr"
			if f == IPv6 {
				daddr = "ip6 daddr"
			}
			script := fmt.Sprintf(`table inet ipvskit {
	set cluster-ip {
		type ipv4_addr
		elements = { 198.18.9.2 }
	}
	chain services {
		type nat hook prerouting priority -100; policy accept;
		ip daddr @cluster-ip counter
	}
}
table %[1]s ipvskit {
	set ipvs-ips {
		type %[2]s
		comment "ipvskit:ipvskit"
		elements = { %[3]s }
	}
}
table %[4]s kube-proxy {
	set cluster-ips {
		type %[5]s
		elements = { %[6]s }
	}
	chain services {
		%[7]s @cluster-ips counter
	}
}
`, other, addrType(other), otherAddr, fam, addrType(fam), addr, daddr)
			if _, err := ns.TryExec(t, []byte(script), "nft", "-f", "-"); err != nil {
				t.Fatalf("nft -f: %v\n%s", err, script)
			}
			snapshot := func(t *testing.T) string {
				t.Helper()
				return NormNFT(ns.Exec(t, "nft", "-s", "list", "table", "inet", "ipvskit")) +
					NormNFT(ns.Exec(t, "nft", "-s", "list", "table", other, "ipvskit")) +
					NormNFT(ns.Exec(t, "nft", "-s", "list", "table", fam, "kube-proxy"))
			}
			before := snapshot(t)
			return func(t *testing.T) {
				t.Helper()
				if after := snapshot(t); after != before {
					t.Fatalf("other programs' tables changed (-before +after):\n%s", LineDiff(before, after))
				}
			}
		},
		// A table of the back end's name without its mark.
		Squat: func(t *testing.T) func(t *testing.T) {
			script := fmt.Sprintf("table %s %s {\n\tset cluster-ip {\n\t\ttype inet_service\n\t\telements = { 80 }\n\t}\n\tchain services {\n\t}\n}\n", fam, DefaultTable)
			if _, err := ns.TryExec(t, []byte(script), "nft", "-f", "-"); err != nil {
				t.Fatalf("nft -f: %v\n%s", err, script)
			}
			before := ListTable(t, ns, f, DefaultTable)
			return func(t *testing.T) {
				t.Helper()
				if after := ListTable(t, ns, f, DefaultTable); after != before {
					t.Fatalf("the foreign table changed (-before +after):\n%s", LineDiff(before, after))
				}
			}
		},
	}
}

// addrType is the nft address type of nft family fam ("ip" or "ip6").
func addrType(fam string) string {
	if fam == "ip6" {
		return "ipv6_addr"
	}
	return "ipv4_addr"
}
