package iptables

import (
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// Right after Apply (full and incremental) Check finds nothing, in both
// flavors and families, also with a foreign ipset that package ipset cannot
// decode (Check then lists the owned sets one by one).
func TestIntegrationIPTablesCheckClean(t *testing.T) {
	for _, fl := range flavors {
		for _, f := range []Family{IPv4, IPv6} {
			t.Run(fl.String()+"/"+f.String(), func(t *testing.T) {
				t.Parallel() // each case has its own namespace
				ns := testutil.NewNetNS(t)
				b := newIPT(t, ns, f, fl)
				if ds, err := b.Check(testCtx(t)); err != nil || len(ds) != 0 {
					t.Fatalf("Check before any Apply: %v %v", ds, err)
				}
				r := sampleFor(t, f, fl, Options{})
				if err := b.Apply(testCtx(t), r); err != nil {
					t.Fatal(err)
				}
				if ds, err := b.Check(testCtx(t)); err != nil || len(ds) != 0 {
					t.Fatalf("Check after a full Apply: %v\n%s", err, driftLines(ds))
				}
				r.Remove(ClusterIPSet, r.Members(ClusterIPSet)[0])
				r.Clear(LoopBack) // the hairpin rule goes too
				if err := b.Apply(testCtx(t), r); err != nil {
					t.Fatal(err)
				}
				ns.Exec(t, "ipset", "create", "FOREIGN-LIST", "list:set")
				ns.Exec(t, "ipset", "create", "FOREIGN-IP", "hash:ip")
				ns.Exec(t, "ipset", "add", "FOREIGN-LIST", "FOREIGN-IP")
				if ds, err := b.Check(testCtx(t)); err != nil || len(ds) != 0 {
					t.Fatalf("Check after an incremental Apply, beside a list:set: %v\n%s", err, driftLines(ds))
				}
			})
		}
	}
}

// iptTamper is a change made with iptables or ipset to the owned objects,
// and the drift Check must report for it.
type iptTamper struct {
	name string
	// edit, if set, changes the applied ruleset (an ipset can only be
	// destroyed while no rule refers to it).
	edit func(r *Ruleset)
	// cmds are command lines; "IPT" stands for the flavor's iptables
	// binary; in ipset commands "IPVSKIT-" becomes the family's prefix and
	// FAMILY the family.
	cmds []string
	want func(f Family) []wantDrift
}

var iptTampers = []iptTamper{
	{name: "chain flushed", cmds: []string{"IPT -t nat -F IPVSKIT-SERVICES"},
		want: func(f Family) []wantDrift {
			_, nat := renderIPTables(sample(f, Options{}), defaultNames)
			n := len(nat.rules["IPVSKIT-SERVICES"])
			return []wantDrift{{"chain nat IPVSKIT-SERVICES", `rules missing (-A IPVSKIT-SERVICES -m comment --comment "ipvskit:ipvskit"; -A IPVSKIT-SERVICES -s ` + loopback(f).String() + " -j RETURN", n, 0}}
		}},
	{name: "jump deleted", cmds: []string{`IPT -t nat -D PREROUTING -m comment --comment "ipvskit:ipvskit" -j IPVSKIT-SERVICES`},
		want: func(f Family) []wantDrift {
			return []wantDrift{{"jump nat PREROUTING -> IPVSKIT-SERVICES", "missing", 0, 0}}
		}},
	{name: "rule added to an owned chain", cmds: []string{"IPT -t filter -A IPVSKIT-FORWARD -j DROP"},
		want: func(f Family) []wantDrift {
			return []wantDrift{{"chain filter IPVSKIT-FORWARD", "1 extra (-A IPVSKIT-FORWARD -j DROP)", 0, 1}}
		}},
	{name: "chain and its jump deleted", cmds: []string{
		`IPT -t filter -D OUTPUT -m comment --comment "ipvskit:ipvskit" -j IPVSKIT-IPVS-OUT-FILTER`,
		"IPT -t filter -F IPVSKIT-IPVS-OUT-FILTER",
		"IPT -t filter -X IPVSKIT-IPVS-OUT-FILTER",
	},
		want: func(f Family) []wantDrift {
			return []wantDrift{
				{"chain filter IPVSKIT-IPVS-OUT-FILTER", "missing", 0, 0},
				{"jump filter OUTPUT -> IPVSKIT-IPVS-OUT-FILTER", "missing", 0, 0},
			}
		}},
	{name: "ipset flushed", cmds: []string{"ipset flush IPVSKIT-CLUSTER-IP"},
		want: func(f Family) []wantDrift {
			return []wantDrift{{"set " + defaultNames.ipset(ClusterIPSet, f), "3 members missing", 3, 0}}
		}},
	{name: "ipset members added and deleted", cmds: []string{"ipset add IPVSKIT-NODE-PORT-TCP 31000", "ipset del IPVSKIT-NODE-PORT-UDP 30053"},
		want: func(f Family) []wantDrift {
			return []wantDrift{
				{"set " + defaultNames.ipset(NodePortTCP, f), "1 extra (31000)", 0, 1},
				{"set " + defaultNames.ipset(NodePortUDP, f), "1 members missing (30053)", 1, 0},
			}
		}},
	// The owner chain's reference keeps anyone from destroying a set; a
	// swap with an empty one is what is left.
	{name: "ipset swapped with an empty one", cmds: []string{
		"ipset create TAMPER hash:ip,port family FAMILY", "ipset swap TAMPER IPVSKIT-NODE-PORT-SCTP", "ipset destroy TAMPER",
	},
		want: func(f Family) []wantDrift {
			return []wantDrift{{"set " + defaultNames.ipset(NodePortSCTP, f), "1 members missing", 1, 0}}
		}},
}

// Every change made to the owned chains, jump rules and ipsets with the
// reference tools is reported by Check, as exactly that; Repair undoes it;
// changes to foreign chains, rules and sets are never reported and Repair
// leaves them as they are.
func TestIntegrationIPTablesCheckTampering(t *testing.T) {
	for _, fl := range flavors {
		for _, f := range []Family{IPv4, IPv6} {
			for _, tc := range iptTampers {
				t.Run(fl.String()+"/"+f.String()+"/"+tc.name, func(t *testing.T) {
					t.Parallel() // each case has its own namespace
					ns := testutil.NewNetNS(t)
					ipt := strings.TrimSuffix(fl.binary(f, "save"), "-save")
					ns.Exec(t, ipt, "-N", "FOREIGN")
					ns.Exec(t, ipt, "-A", "FOREIGN", "-j", "ACCEPT")
					// Address matches only: the VM rig's kernel has no xt_tcpudp.
					foreignSrc := map[Family][2]string{IPv4: {"198.18.99.1", "198.18.99.2"}, IPv6: {"2001:db8::99:1", "2001:db8::99:2"}}[f]
					ns.Exec(t, ipt, "-A", "INPUT", "-s", foreignSrc[0], "-j", "ACCEPT")
					ns.Exec(t, "ipset", "create", "KUBE-FOREIGN", "hash:ip", "family", map[Family]string{IPv4: "inet", IPv6: "inet6"}[f])
					b := newIPT(t, ns, f, fl)
					r := sampleFor(t, f, fl, Options{})
					if tc.edit != nil {
						tc.edit(r)
					}
					if err := b.Apply(testCtx(t), r); err != nil {
						t.Fatal(err)
					}
					applied := strip(ns.Exec(t, fl.binary(f, "save")))
					for _, c := range tc.cmds {
						c = strings.Replace(c, "IPT ", ipt+" ", 1)
						if strings.HasPrefix(c, "ipset ") {
							c = strings.ReplaceAll(c, "FAMILY", map[Family]string{IPv4: "inet", IPv6: "inet6"}[f])
							if f == IPv6 {
								c = strings.ReplaceAll(c, " IPVSKIT-", " IPVSKIT-6-")
							}
						}
						ns.Exec(t, "sh", "-c", c)
					}
					// Foreign changes: never reported, never undone.
					ns.Exec(t, ipt, "-F", "FOREIGN")
					ns.Exec(t, ipt, "-A", "INPUT", "-s", foreignSrc[1], "-j", "ACCEPT")
					ns.Exec(t, "ipset", "add", "KUBE-FOREIGN", map[Family]string{IPv4: "198.18.99.1", IPv6: "2001:db8::99"}[f])
					foreign := foreignLines(ns.Exec(t, fl.binary(f, "save")) + ns.Exec(t, "ipset", "save", "KUBE-FOREIGN"))

					ds, err := b.Check(testCtx(t))
					if err != nil {
						t.Fatal(err)
					}
					checkDrifts(t, ds, tc.want(f)...)
					if err := b.Repair(testCtx(t)); err != nil {
						t.Fatal(err)
					}
					checkIPT(t, ns, b, r)
					if ds, err := b.Check(testCtx(t)); err != nil || len(ds) != 0 {
						t.Fatalf("Check after Repair: %v\n%s", err, driftLines(ds))
					}
					after := ns.Exec(t, fl.binary(f, "save"))
					if got := foreignLines(after + ns.Exec(t, "ipset", "save", "KUBE-FOREIGN")); !slices.Equal(got, foreign) {
						t.Fatalf("Repair changed foreign objects (-before +after):\n%s", lineDiff(strings.Join(foreign, "\n"), strings.Join(got, "\n")))
					}
					// The jump rules are back, once each: the tables hold
					// what they held after Apply, plus the foreign changes.
					for _, l := range strings.Split(applied, "\n") {
						if strings.Contains(l, "-j IPVSKIT-") && !strings.Contains(after, l) {
							t.Errorf("after Repair, %q is missing", l)
						}
					}
					if n := strings.Count(after, "-j IPVSKIT-SERVICES"); n != 2 {
						t.Errorf("after Repair, %d jumps to IPVSKIT-SERVICES, want 2", n)
					}
				})
			}
		}
	}
}

// foreignLines are the lines of iptables-save and ipset save output that
// concern no owned object.
func foreignLines(s string) []string {
	var out []string
	for _, l := range strings.Split(strip(s), "\n") {
		if l == "" || strings.HasPrefix(l, "*") || l == "COMMIT" || strings.Contains(l, "IPVSKIT-") || strings.Contains(l, "ipvskit-tmp-") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// The stats of a real sync: every ipset replaced and two restores on the
// first, one element on the next.
func TestIntegrationIPTablesStats(t *testing.T) {
	ns := testutil.NewNetNS(t)
	b := newIPT(t, ns, IPv4, FlavorNFT)
	r := sampleFor(t, IPv4, FlavorNFT, Options{})
	if err := b.Apply(testCtx(t), r); err != nil {
		t.Fatal(err)
	}
	if st := b.LastStats(); !st.Full || st.SetsReplaced != numSets-1 || st.RuleWrites != 2 || st.SetsTime <= 0 || st.RulesTime <= 0 {
		t.Fatalf("first sync: %+v", st)
	}
	r.Add(ClusterIPSet, AddrPort(mustAddr("198.18.9.9"), TCP, 80))
	if err := b.Apply(testCtx(t), r); err != nil {
		t.Fatal(err)
	}
	if st := b.LastStats(); st.Full || st.ElementsAdded != 1 || st.ElementsDeleted != 0 || st.RuleWrites != 0 || st.RulesTime != 0 {
		t.Fatalf("one member added: %+v", st)
	}
}
