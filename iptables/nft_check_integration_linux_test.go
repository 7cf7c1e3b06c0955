package iptables

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// Right after an Apply (full, then incremental), Check finds nothing, for
// every option combination; before any Apply it has nothing to compare.
func TestIntegrationNFTablesCheckClean(t *testing.T) {
	for _, f := range []Family{IPv4, IPv6} {
		for name, o := range optionCases(f) {
			t.Run(f.String()+"/"+name, func(t *testing.T) {
				t.Parallel() // each case has its own namespace
				ns := testutil.NewNetNS(t)
				b := newNFT(t, ns, f, 0)
				if ds, err := b.Check(testCtx(t)); err != nil || len(ds) != 0 {
					t.Fatalf("Check before any Apply: %v %v", ds, err)
				}
				r := sample(f, o)
				if err := b.Apply(testCtx(t), r); err != nil {
					t.Fatal(err)
				}
				ds, err := b.Check(testCtx(t))
				if err != nil || len(ds) != 0 {
					t.Fatalf("Check after a full Apply: %v\n%s", err, driftLines(ds))
				}
				r.Remove(ClusterIPSet, r.Members(ClusterIPSet)[0])
				r.Add(LoadBalancerSourceCIDR, r.Members(LoadBalancerSourceCIDR)[0])
				mutate(rand.New(rand.NewPCG(3, uint64(f))), r)
				if err := b.Apply(testCtx(t), r); err != nil {
					t.Fatal(err)
				}
				if ds, err := b.Check(testCtx(t)); err != nil || len(ds) != 0 {
					t.Fatalf("Check after an incremental Apply: %v\n%s", err, driftLines(ds))
				}
			})
		}
	}
}

// nftTamper is a change made with nft to the owned table, and the drift
// Check must report for it.
type nftTamper struct {
	name string
	// opts are the options of the applied ruleset (some objects can only
	// be deleted when no rule refers to them).
	opts Options
	// cmds are nft command lines, with {fam} for ip or ip6 and {a} for an
	// address of the family.
	cmds []string
	want func(f Family) []wantDrift
}

func nftTampers() []nftTamper {
	obj := func(f Family, kind, name string) string {
		if name == "" {
			return kind + " " + famName(f) + " " + DefaultTable
		}
		return kind + " " + famName(f) + " " + DefaultTable + " " + name
	}
	return []nftTamper{
		{name: "table deleted", cmds: []string{"delete table {fam} ipvskit"},
			want: func(f Family) []wantDrift { return []wantDrift{{obj(f, "table", ""), "missing", 0, 0}} }},
		{name: "table made dormant", cmds: []string{"add table {fam} ipvskit { flags dormant; }"},
			want: func(f Family) []wantDrift {
				return []wantDrift{{obj(f, "table", ""), "dormant (flags 0x1), want active", 0, 0}}
			}},
		{name: "set flushed", cmds: []string{"flush set {fam} ipvskit cluster-ip"},
			want: func(f Family) []wantDrift {
				return []wantDrift{{obj(f, "set", "cluster-ip"), "3 members missing", 3, 0}}
			}},
		{name: "element added and deleted", cmds: []string{
			"add element {fam} ipvskit cluster-ip { {a}9 . tcp . 8443 }",
			"delete element {fam} ipvskit node-port-tcp { 30080 }",
		},
			want: func(f Family) []wantDrift {
				return []wantDrift{
					{obj(f, "set", "cluster-ip"), "1 extra (" + testAddr(f) + "9 . tcp . 8443)", 0, 1},
					{obj(f, "set", "node-port-tcp"), "1 members missing (30080)", 1, 0},
				}
			}},
		{name: "interval set changed", cmds: []string{
			"flush set {fam} ipvskit load-balancer-source-cidr",
			"add element {fam} ipvskit load-balancer-source-cidr { {a}5 . tcp . 80 . {net} }",
			"add element {fam} ipvskit loop-back { {a}7 . udp . 53 . {a}7 }",
		},
			want: func(f Family) []wantDrift {
				a := testAddr(f)
				return []wantDrift{
					{obj(f, "set", "loop-back"), "1 extra (" + a + "7 . udp . 53 . " + a + "7)", 0, 1},
					{obj(f, "set", "load-balancer-source-cidr"), "2 members missing (" + a + "5 . tcp . 80 . " + testNet(f, "1") +
						"; " + a + "5 . tcp . 80 . " + testNet(f, "2") + "), 1 extra (" + a + "5 . tcp . 80 . " + testNet(f, "9") + ")", 2, 1},
				}
			}},
		{name: "unreferenced set deleted", opts: Options{NoVIPAccessFilter: true, NoNodeSourceRangeFilter: true},
			cmds: []string{"delete set {fam} ipvskit ipvs-ips"},
			want: func(f Family) []wantDrift { return []wantDrift{{obj(f, "set", "ipvs-ips"), "missing", 0, 0}} }},
		{name: "chain flushed", cmds: []string{"flush chain {fam} ipvskit node-port"},
			want: func(f Family) []wantDrift {
				return []wantDrift{{obj(f, "chain", "node-port"), "6 rules missing (tcp dport @node-port-local-tcp return", 6, 0}}
			}},
		{name: "rule added", cmds: []string{"add rule {fam} ipvskit services counter accept"},
			want: func(f Family) []wantDrift {
				return []wantDrift{{obj(f, "chain", "services"), "1 extra (handle ", 0, 1}}
			}},
		{name: "base chain deleted and policy changed", cmds: []string{
			"delete chain {fam} ipvskit filter-output",
			"chain {fam} ipvskit filter-forward { type filter hook forward priority 0; policy drop; }",
		},
			want: func(f Family) []wantDrift {
				return []wantDrift{
					{obj(f, "chain", "filter-forward"), "policy drop, want type filter hook forward priority 0 policy accept", 0, 0},
					{obj(f, "chain", "filter-output"), "missing", 0, 0},
				}
			}},
		{name: "chain added to the table", cmds: []string{"add chain {fam} ipvskit intruder"},
			want: func(f Family) []wantDrift {
				return []wantDrift{{obj(f, "chain", "intruder"), "not applied by this back end", 0, 0}}
			}},
	}
}

// testAddr is the prefix of sample()'s addresses that the nft commands'
// {a} stands for.
func testAddr(f Family) string {
	if f == IPv6 {
		return "2001:db8::"
	}
	return "198.18.0."
}

// testNet is sample()'s network n in nft notation, the {net} of the nft
// commands being testNet(f, "9").
func testNet(f Family, n string) string {
	if f == IPv6 {
		return "2001:db8:" + n + "::/48"
	}
	return "198.19." + n + ".0/24"
}

// foreignNFTScript is a foreign table in both families, with a set and a
// chain named like ours.
const foreignNFTScript = `table ip foreign {
	set cluster-ip { type ipv4_addr; elements = { 198.18.99.1 } }
	chain services { ip daddr @cluster-ip counter accept; }
}
table ip6 foreign {
	set cluster-ip { type ipv6_addr; elements = { 2001:db8::99 } }
	chain services { ip6 daddr @cluster-ip counter accept; }
}
`

// Every change made to the owned table with nft is reported by Check, as
// exactly that; Repair undoes it; tampering with a foreign table is never
// reported and Repair leaves the foreign table as it is.
func TestIntegrationNFTablesCheckTampering(t *testing.T) {
	for _, f := range []Family{IPv4, IPv6} {
		for _, tc := range nftTampers() {
			t.Run(f.String()+"/"+tc.name, func(t *testing.T) {
				t.Parallel() // each case has its own namespace
				ns := testutil.NewNetNS(t)
				ns.Exec(t, "sh", "-c", "printf '%s' \"$0\" | nft -f -", foreignNFTScript)
				b := newNFT(t, ns, f, 0)
				r := sample(f, tc.opts)
				if err := b.Apply(testCtx(t), r); err != nil {
					t.Fatal(err)
				}
				want := listTable(t, ns, f, DefaultTable)
				for _, c := range tc.cmds {
					c = strings.NewReplacer("{fam}", famName(f), "{a}", testAddr(f), "{net}", testNet(f, "9")).Replace(c)
					if _, err := ns.TryExec(t, nil, "nft", c); err != nil {
						t.Fatalf("nft %s: %v", c, err)
					}
				}
				// Foreign changes: never reported.
				ns.Exec(t, "nft", "flush set "+famName(f)+" foreign cluster-ip")
				ns.Exec(t, "nft", "add rule "+famName(f)+" foreign services drop")
				foreign := ns.Exec(t, "nft", "-s", "list", "table", famName(f), "foreign")

				ds, err := b.Check(testCtx(t))
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("drift:\n%s", driftLines(ds))
				checkDrifts(t, ds, tc.want(f)...)
				if err := b.Repair(testCtx(t)); err != nil {
					t.Fatal(err)
				}
				if got := listTable(t, ns, f, DefaultTable); got != want {
					t.Fatalf("after Repair (-applied +repaired):\n%s", lineDiff(want, got))
				}
				if ds, err := b.Check(testCtx(t)); err != nil || len(ds) != 0 {
					t.Fatalf("Check after Repair: %v\n%s", err, driftLines(ds))
				}
				if got := ns.Exec(t, "nft", "-s", "list", "table", famName(f), "foreign"); got != foreign {
					t.Fatalf("Repair changed the foreign table (-before +after):\n%s", lineDiff(foreign, got))
				}
				if st := b.LastStats(); !st.Full || st.SetsReplaced != numSets {
					t.Errorf("Repair's stats: %+v", st)
				}
			})
		}
	}
}

// The stats say what each sync sent.
func TestIntegrationNFTablesStats(t *testing.T) {
	ns := testutil.NewNetNS(t)
	b := newNFT(t, ns, IPv4, 0)
	r := sample(IPv4, Options{})
	if err := b.Apply(testCtx(t), r); err != nil {
		t.Fatal(err)
	}
	members, rules := 0, 0
	for _, s := range Sets() {
		members += len(nftMembers(r, s))
	}
	chains := nftChains(r, nil)
	for _, c := range chains {
		rules += len(c.rules)
	}
	st := b.LastStats()
	if !st.Full || st.SetsReplaced != numSets || st.ElementsAdded != members || st.ElementsDeleted != 0 ||
		st.RuleWrites != len(chains)+rules || st.RulesTime <= 0 || st.SetsTime != 0 {
		t.Fatalf("full sync stats %+v; want %d members, %d chain and rule messages, all time in RulesTime", st, members, len(chains)+rules)
	}
	r.Add(ClusterIPSet, AddrPort(mustAddr("198.18.9.9"), TCP, 80), AddrPort(mustAddr("198.18.9.9"), TCP, 81))
	r.Remove(NodePortTCP, Port(30080))
	if err := b.Apply(testCtx(t), r); err != nil {
		t.Fatal(err)
	}
	st = b.LastStats()
	if st.Full || st.SetsReplaced != 0 || st.ElementsAdded != 2 || st.ElementsDeleted != 1 || st.RuleWrites != 0 || st.SetsTime <= 0 || st.RulesTime != 0 {
		t.Fatalf("incremental stats %+v; want 2 added, 1 deleted, no rules", st)
	}
	if err := b.Apply(testCtx(t), r); err != nil {
		t.Fatal(err)
	}
	if st := b.LastStats(); st != (ApplyStats{}) {
		t.Fatalf("a sync without change: %+v", st)
	}
	bad := r.Clone()
	bad.Add(ClusterIPSet, AddrPort(mustAddr("2001:db8::1"), TCP, 80))
	if err := b.Apply(testCtx(t), bad); err == nil {
		t.Fatal("a bad ruleset was applied")
	}
	if st := b.LastStats(); st != (ApplyStats{}) {
		t.Fatalf("a refused sync: %+v", st)
	}
}

// After a failed Apply, Check compares with the ruleset that failed and
// Repair writes it.
func TestIntegrationNFTablesRepairAfterFailure(t *testing.T) {
	ns := testutil.NewNetNS(t)
	b := newNFT(t, ns, IPv4, 0)
	r := sample(IPv4, Options{})
	if err := b.Apply(testCtx(t), r); err != nil {
		t.Fatal(err)
	}
	next := r.Clone()
	next.Add(ClusterIPSet, AddrPort(mustAddr("198.18.9.9"), TCP, 80))
	ns.Exec(t, "nft", "delete table ip ipvskit") // the incremental batch fails
	if err := b.Apply(testCtx(t), next); err == nil {
		t.Fatal("an incremental sync into a deleted table succeeded")
	}
	ds, err := b.Check(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	checkDrifts(t, ds, wantDrift{"table ip ipvskit", "missing", 0, 0})
	if err := b.Repair(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got, want := listTable(t, ns, IPv4, DefaultTable), scriptListing(t, next); got != want {
		t.Fatalf("Repair after a failure (-want +got):\n%s", lineDiff(want, got))
	}
}
