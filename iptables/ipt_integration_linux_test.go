package iptables

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

func newIPT(t *testing.T, ns *testutil.NetNS, f Family, fl Flavor) *IPTablesBackend {
	t.Helper()
	b, err := NewIPTables(&IPTablesConfig{NetNS: ns.Handle(), Family: f, Flavor: fl})
	if errors.Is(err, ErrNotSupported) {
		testutil.Missing(t, fl.binary(f, "restore")+" and ipset", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// hasXTIPVS reports whether the kernel has the ipvs match (xt_ipvs, which
// needs IPVS), probed in a throwaway namespace.
func hasXTIPVS(t *testing.T, f Family, fl Flavor) error {
	ns := testutil.NewNetNS(t)
	host := "198.18.0.1/32"
	if f == IPv6 {
		host = "2001:db8::1/128"
	}
	in := fmt.Sprintf("*filter\n:PROBE - [0:0]\n-A PROBE -s %s -m ipvs --vaddr %s --vproto 6 --vport 80 -j DROP\nCOMMIT\n", host, host)
	_, err := ns.TryExec(t, []byte(in), fl.binary(f, "restore"), "--noflush")
	return err
}

// sampleFor is sample(), without the members that need xt_ipvs when the
// kernel lacks it (the out-filter test covers those).
func sampleFor(t *testing.T, f Family, fl Flavor, o Options) *Ruleset {
	r := sample(f, o)
	if hasXTIPVS(t, f, fl) != nil {
		r.Clear(LBNoNodeAccess)
	}
	return r
}

func checkIPT(t *testing.T, ns *testutil.NetNS, b *IPTablesBackend, r *Ruleset) {
	t.Helper()
	f := r.family()
	want, err := RenderIPTables(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	save := ns.Exec(t, b.Flavor().binary(f, "save"))
	if got := ownedLines(save); got != want {
		t.Fatalf("%s after Apply differs from the rendered rules (-want +got):\n%s", b.Flavor().binary(f, "save"), lineDiff(want, got))
	}
	if got, want := ipsetMembers(t, ns, f), wantIPSetMembers(r); !slices.Equal(got, want) {
		t.Fatalf("ipset contents (-want +got):\n%s", lineDiff(strings.Join(want, "\n"), strings.Join(got, "\n")))
	}
}

// jumpOrder returns the jump rules in a built-in chain, in order.
func jumpOrder(save, table, chain string) []string {
	var out []string
	cur := ""
	for _, l := range strings.Split(save, "\n") {
		if strings.HasPrefix(l, "*") {
			cur = l[1:]
		}
		if cur == table && strings.HasPrefix(l, "-A "+chain+" ") && strings.Contains(l, "-j IPVSKIT-") {
			out = append(out, l[strings.LastIndex(l, "-j ")+3:])
		}
	}
	return out
}

func TestIntegrationIPTablesMatchesRender(t *testing.T) {
	for _, fl := range flavors {
		for _, f := range []Family{IPv4, IPv6} {
			for name, o := range optionCases(f) {
				t.Run(fl.String()+"/"+f.String()+"/"+name, func(t *testing.T) {
					t.Parallel() // each case has its own namespace
					ns := testutil.NewNetNS(t)
					b := newIPT(t, ns, f, fl)
					r := sampleFor(t, f, fl, o)
					if err := b.Apply(testCtx(t), r); err != nil {
						t.Fatal(err)
					}
					checkIPT(t, ns, b, r)
					save := ns.Exec(t, fl.binary(f, "save"))
					for _, c := range []struct {
						table, chain string
						want         []string
					}{
						{"filter", "INPUT", []string{"IPVSKIT-IPVS-FILTER", "IPVSKIT-PROXY-FIREWALL", "IPVSKIT-NODE-PORT"}},
						{"filter", "FORWARD", []string{"IPVSKIT-PROXY-FIREWALL", "IPVSKIT-FORWARD"}},
						{"filter", "OUTPUT", []string{"IPVSKIT-IPVS-OUT-FILTER"}},
						{"nat", "PREROUTING", []string{"IPVSKIT-SERVICES"}},
						{"nat", "OUTPUT", []string{"IPVSKIT-SERVICES"}},
						{"nat", "POSTROUTING", []string{"IPVSKIT-POSTROUTING"}},
					} {
						if got := jumpOrder(save, c.table, c.chain); !slices.Equal(got, c.want) {
							t.Errorf("%s %s jumps: got %v, want %v", c.table, c.chain, got, c.want)
						}
					}
					// Jumps are not re-inserted by later syncs.
					r.Add(ClusterIPSet, AddrPort(r.Members(ClusterIPSet)[0].Addr, TCP, 8443))
					if err := b.Apply(testCtx(t), r); err != nil {
						t.Fatal(err)
					}
					checkIPT(t, ns, b, r)
					if got := jumpOrder(ns.Exec(t, fl.binary(f, "save")), "filter", "INPUT"); len(got) != 3 {
						t.Errorf("jump rules duplicated: %v", got)
					}
				})
			}
		}
	}
}

// The node source-range filter needs the ipvs match (xt_ipvs): here only
// where the kernel has IPVS (the VM rig).
func TestIntegrationIPTablesOutFilter(t *testing.T) {
	for _, fl := range flavors {
		for _, f := range []Family{IPv4, IPv6} {
			t.Run(fl.String()+"/"+f.String(), func(t *testing.T) {
				if err := hasXTIPVS(t, f, fl); err != nil {
					testutil.Missing(t, "the ipvs match (module xt_ipvs, needs ip_vs)", err)
				}
				ns := testutil.NewNetNS(t)
				b := newIPT(t, ns, f, fl)
				r := sample(f, Options{})
				if err := b.Apply(testCtx(t), r); err != nil {
					t.Fatal(err)
				}
				checkIPT(t, ns, b, r)
			})
		}
	}
}

func TestIntegrationIPTablesIncrementalProperty(t *testing.T) {
	for _, fl := range flavors {
		for _, f := range []Family{IPv4, IPv6} {
			t.Run(fl.String()+"/"+f.String(), func(t *testing.T) {
				t.Parallel() // each case has its own namespaces
				rng := rand.New(rand.NewPCG(2, uint64(f)+uint64(fl)<<8))
				ns := testutil.NewNetNS(t)
				b := newIPT(t, ns, f, fl)
				r := sampleFor(t, f, fl, Options{})
				xtipvs := r.Len(LBNoNodeAccess) > 0
				if err := b.Apply(testCtx(t), r); err != nil {
					t.Fatal(err)
				}
				for i := range 20 {
					mutate(rng, r)
					if !xtipvs {
						r.Clear(LBNoNodeAccess)
					}
					if err := b.Apply(testCtx(t), r); err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
				}
				checkIPT(t, ns, b, r)
				fresh := testutil.NewNetNS(t)
				fb := newIPT(t, fresh, f, fl)
				if err := fb.ApplyFull(testCtx(t), r); err != nil {
					t.Fatal(err)
				}
				if a, b := ownedLines(ns.Exec(t, fl.binary(f, "save"))), ownedLines(fresh.Exec(t, fl.binary(f, "save"))); a != b {
					t.Fatalf("incremental vs fresh full sync (-full +incremental):\n%s", lineDiff(b, a))
				}
				if a, b := ipsetMembers(t, ns, f), ipsetMembers(t, fresh, f); !slices.Equal(a, b) {
					t.Fatalf("ipsets: incremental %v, full %v", a, b)
				}
			})
		}
	}
}

// kubelet-style chains, a foreign rule, a foreign ipset and a foreign nft
// table survive Apply and Cleanup; Cleanup removes exactly what is owned.
const foreignIPT = `*filter
:KUBE-FIREWALL - [0:0]
:KUBE-KUBELET-CANARY - [0:0]
:FOREIGN - [0:0]
-A INPUT -j KUBE-FIREWALL
-A INPUT -s 198.18.99.1/32 -j DROP
-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
-A FOREIGN -j ACCEPT
COMMIT
*nat
:KUBE-KUBELET-CANARY - [0:0]
:KUBE-MARK-DROP - [0:0]
-A POSTROUTING -s 198.18.99.0/24 -j MASQUERADE
COMMIT
`

func TestIntegrationIPTablesOwnership(t *testing.T) {
	for _, fl := range flavors {
		t.Run(fl.String(), func(t *testing.T) {
			ns := testutil.NewNetNS(t)
			if _, err := ns.TryExec(t, []byte(foreignIPT), fl.binary(IPv4, "restore")); err != nil {
				t.Fatal(err)
			}
			ns.Exec(t, "ipset", "create", "KUBE-FOREIGN", "hash:ip")
			ns.Exec(t, "ipset", "add", "KUBE-FOREIGN", "198.18.99.3")
			ns.Exec(t, "nft", "add", "table", "inet", "foreign")
			before := ns.Exec(t, fl.binary(IPv4, "save"))
			beforeSets := ns.Exec(t, "ipset", "save")
			b := newIPT(t, ns, IPv4, fl)
			r := sampleFor(t, IPv4, fl, Options{})
			if err := b.Apply(testCtx(t), r); err != nil {
				t.Fatal(err)
			}
			checkIPT(t, ns, b, r)
			mid := ns.Exec(t, fl.binary(IPv4, "save"))
			for _, l := range strings.Split(strip(before), "\n") {
				if l != "" && !strings.Contains(mid, l) {
					t.Errorf("foreign line lost by Apply: %q", l)
				}
			}
			if err := b.Cleanup(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			if got := strip(ns.Exec(t, fl.binary(IPv4, "save"))); got != strip(before) {
				t.Fatalf("after Cleanup (-before +after):\n%s", lineDiff(strip(before), got))
			}
			if got := ns.Exec(t, "ipset", "save"); got != beforeSets {
				t.Fatalf("ipsets after Cleanup (-before +after):\n%s", lineDiff(beforeSets, got))
			}
			if !strings.Contains(ns.Exec(t, "nft", "list", "tables"), "table inet foreign") {
				t.Fatal("the foreign nft table is gone")
			}
		})
	}
}

// strip drops iptables-save's comment lines and counters.
func strip(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, ":") {
			if i := strings.LastIndex(l, " ["); i > 0 {
				l = l[:i]
			}
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func TestIntegrationIPTablesRejectsBadInput(t *testing.T) {
	ns := testutil.NewNetNS(t)
	b := newIPT(t, ns, IPv4, FlavorNFT)
	good := sampleFor(t, IPv4, FlavorNFT, Options{})
	if err := b.Apply(testCtx(t), good); err != nil {
		t.Fatal(err)
	}
	save, sets := ns.Exec(t, "iptables-nft-save"), ns.Exec(t, "ipset", "save")
	bad := good.Clone()
	bad.Add(ClusterIPSet, AddrPort(mustAddr("198.18.50.1"), TCP, 81))
	bad.Options.LocalMatch = LocalMatch{Mode: LocalInterface, Interface: "way-too-long-name"}
	var ve *ValidationError
	if err := b.Apply(testCtx(t), bad); !errors.As(err, &ve) || ve.Field != "Options.LocalMatch.Interface" {
		t.Fatalf("want a ValidationError on the interface, got %v", err)
	}
	if strip(ns.Exec(t, "iptables-nft-save")) != strip(save) || ns.Exec(t, "ipset", "save") != sets {
		t.Fatal("a rejected ruleset changed the kernel's state")
	}
	big := good.Clone()
	for i := range 65537 {
		big.Add(IPVSIPs, Addr(mustAddr(fmt.Sprintf("198.18.%d.%d", 100+i/65536, 0)).Next()))
		_ = i
	}
	for i := range 65537 {
		big.Add(ClusterIPSet, AddrPort(mustAddr("198.18.200.1"), []Protocol{TCP, UDP}[i%2], uint16(i/2+1)))
	}
	if err := b.Apply(testCtx(t), big); !errors.As(err, &ve) || ve.Field != "cluster-ip" {
		t.Fatalf("want a ValidationError for an overfull ipset, got %v", err)
	}
}

// A failure half way through a sync leaves a state the next Apply repairs.
func TestIntegrationIPTablesFailedApplyIsRepaired(t *testing.T) {
	for _, step := range []string{"restore", "ipset del loop-back", "ipset load-balancer"} {
		t.Run(step, func(t *testing.T) {
			ns := testutil.NewNetNS(t)
			b := newIPT(t, ns, IPv4, FlavorNFT)
			r := sampleFor(t, IPv4, FlavorNFT, Options{})
			if err := b.Apply(testCtx(t), r); err != nil {
				t.Fatal(err)
			}
			next := r.Clone()
			next.Clear(LoopBack)
			next.Clear(LoadBalancer)
			next.Add(ExternalIPSet, AddrPort(mustAddr("198.18.70.1"), UDP, 53))
			injected := errors.New("injected")
			b.b.fail = func(s string) error {
				if s == step {
					return injected
				}
				return nil
			}
			full := step == "ipset load-balancer"
			var err error
			if full {
				err = b.ApplyFull(testCtx(t), next)
			} else {
				err = b.Apply(testCtx(t), next)
			}
			if !errors.Is(err, injected) {
				t.Fatalf("want the injected error, got %v", err)
			}
			b.b.fail = nil
			if err := b.Apply(testCtx(t), next); err != nil {
				t.Fatal(err)
			}
			checkIPT(t, ns, b, next)
		})
	}
}

// Switching back ends: each one's first sync removes the other's objects.
func TestIntegrationSwitchBackends(t *testing.T) {
	ns := testutil.NewNetNS(t)
	r := sampleFor(t, IPv4, FlavorNFT, Options{})
	vs := AddrPort(netip.MustParseAddr("198.18.100.77"), TCP, 80)
	r.Add(VirtualServers, vs)
	n := newNFT(t, ns, IPv4, 0)
	if err := n.Apply(testCtx(t), r); err != nil {
		t.Fatal(err)
	}
	ipt := newIPT(t, ns, IPv4, FlavorNFT)
	// Before its first Apply, the new back end's ledger is the other's:
	// the earlier run's virtual servers stay owned across the switch.
	wantLedger := func(b interface {
		Owned(context.Context) (*Ruleset, error)
	}, when string) {
		t.Helper()
		got, err := b.Owned(testCtx(t))
		if err != nil {
			t.Fatalf("%s: Owned: %v", when, err)
		}
		if got == nil || !slices.Contains(got.Members(VirtualServers), vs) || got.Len(IPVSIPs) != r.Len(IPVSIPs) {
			t.Fatalf("%s: ledger %v, want the virtual server and %d VIPs", when, got, r.Len(IPVSIPs))
		}
	}
	wantLedger(ipt, "iptables before its first Apply, beside the nftables table")
	if err := ipt.Apply(testCtx(t), r); err != nil {
		t.Fatal(err)
	}
	wantLedger(ipt, "iptables after its first Apply")
	if strings.Contains(ns.Exec(t, "nft", "list", "tables"), "table ip "+DefaultTable) {
		t.Fatal("the iptables back end left the nftables back end's table")
	}
	checkIPT(t, ns, ipt, r)
	n2 := newNFT(t, ns, IPv4, 0)
	wantLedger(n2, "nftables before its first Apply, beside the iptables objects")
	if err := n2.Apply(testCtx(t), r); err != nil {
		t.Fatal(err)
	}
	if got := ownedLines(ns.Exec(t, "iptables-nft-save")); got != "" {
		t.Fatalf("the nftables back end left iptables chains:\n%s", got)
	}
	if got := ipsetMembers(t, ns, IPv4); len(got) != 0 || strings.Contains(ns.Exec(t, "ipset", "list", "-n"), "KUBE-") {
		t.Fatalf("the nftables back end left ipsets: %v", got)
	}
	if strings.Contains(ns.Exec(t, "iptables-nft-save"), "KUBE-") {
		t.Fatal("jump rules left behind")
	}
}

// Auto picks legacy when only legacy holds rules, nft otherwise.
func TestIntegrationIPTablesFlavorAuto(t *testing.T) {
	ns := testutil.NewNetNS(t)
	ns.Exec(t, "iptables-legacy", "-A", "INPUT", "-s", "198.18.99.1", "-j", "DROP")
	b := newIPT(t, ns, IPv4, FlavorAuto)
	if b.Flavor() != FlavorLegacy {
		t.Fatalf("with legacy rules present, Auto picked %v", b.Flavor())
	}
	ns2 := testutil.NewNetNS(t)
	ns2.Exec(t, "iptables-nft", "-A", "INPUT", "-s", "198.18.99.1", "-j", "DROP")
	if b2 := newIPT(t, ns2, IPv4, FlavorAuto); b2.Flavor() != FlavorNFT {
		t.Fatalf("with nft rules present, Auto picked %v", b2.Flavor())
	}
}

// Repair re-inserts deleted jump rules and rewrites a damaged chain.
func TestIntegrationIPTablesRepair(t *testing.T) {
	for _, fl := range flavors {
		t.Run(fl.String(), func(t *testing.T) {
			ns := testutil.NewNetNS(t)
			b := newIPT(t, ns, IPv4, fl)
			r := sampleFor(t, IPv4, fl, Options{})
			if err := b.Apply(testCtx(t), r); err != nil {
				t.Fatal(err)
			}
			want := strip(ns.Exec(t, fl.binary(IPv4, "save")))
			cmd := strings.TrimSuffix(fl.binary(IPv4, "save"), "-save")
			ns.Exec(t, cmd, "-t", "nat", "-D", "OUTPUT", "-m", "comment", "--comment", "ipvskit:ipvskit", "-j", "IPVSKIT-SERVICES")
			ns.Exec(t, cmd, "-t", "nat", "-F", "IPVSKIT-SERVICES")
			if err := b.Repair(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			if got := strip(ns.Exec(t, fl.binary(IPv4, "save"))); got != want {
				t.Fatalf("after Repair (-want +got):\n%s", lineDiff(want, got))
			}
		})
	}
}
