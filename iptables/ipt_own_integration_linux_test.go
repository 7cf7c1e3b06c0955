package iptables

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

func newIPTCfg(t *testing.T, ns *testutil.NetNS, cfg IPTablesConfig) *IPTablesBackend {
	t.Helper()
	cfg.NetNS = ns.Handle()
	b, err := NewIPTables(&cfg)
	if errors.Is(err, ErrNotSupported) {
		testutil.Missing(t, cfg.Flavor.binary(cfg.Family, "restore")+" and ipset", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// theirs is everything in ns that is not the default instance's: the
// iptables-save lines of the flavor without counters, without our chains,
// rules and jumps, then `ipset save` without our sets.
func theirs(t *testing.T, ns *testutil.NetNS, f Family, fl Flavor) string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strip(ns.Exec(t, fl.binary(f, "save"))), "\n") {
		if !strings.Contains(l, "IPVSKIT-") && !strings.Contains(l, `"ipvskit:ipvskit"`) {
			out = append(out, l)
		}
	}
	out = append(out, "# ipsets")
	for _, l := range strings.Split(ns.Exec(t, "ipset", "save"), "\n") {
		if fs := strings.Fields(l); len(fs) < 2 || !strings.HasPrefix(fs[1], "IPVSKIT-") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// everything is iptables-save of both flavors (without counters) and ipset
// save in ns.
func everything(t *testing.T, ns *testutil.NetNS, f Family) string {
	t.Helper()
	return strip(ns.Exec(t, FlavorLegacy.binary(f, "save"))) + strip(ns.Exec(t, FlavorNFT.binary(f, "save"))) + ns.Exec(t, "ipset", "save")
}

// serveTCP answers every connection to addr in ns with reply.
func serveTCP(t *testing.T, ns *testutil.NetNS, addr, reply string) {
	t.Helper()
	ns.Serve(t, "tcp", addr, func(c net.Conn) { c.Write([]byte(reply)) })
}

// fetch connects from ns to addr and returns what the server sent.
func fetch(t *testing.T, ns *testutil.NetNS, addr string) (string, error) {
	t.Helper()
	var (
		out []byte
		err error
	)
	ns.Do(t, func() {
		var c net.Conn
		if c, err = net.DialTimeout("tcp", addr, 3*time.Second); err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(3 * time.Second))
		out, err = io.ReadAll(c)
	})
	return string(out), err
}

// On a kube-proxy iptables-mode node, the default instance changes nothing
// of kube-proxy's or kubelet's (nor a foreign rule that uses KUBE-MARK-MASQ,
// nor a foreign ipset), through every operation, and kube-proxy's service
// keeps answering.
func TestIntegrationIPTablesBesideKubeProxy(t *testing.T) {
	kp, err := os.ReadFile("testdata/kube-proxy-iptables-mode.save")
	if err != nil {
		t.Fatal(err)
	}
	for _, fl := range flavors {
		t.Run(fl.String(), func(t *testing.T) {
			t.Parallel() // own namespaces
			ns, be := testutil.NewNetNS(t), testutil.NewNetNS(t)
			testutil.Veth(t, ns, "node0", netip.MustParsePrefix("198.18.40.1/24"), be, "be0", netip.MustParsePrefix("198.18.40.2/24"))
			ns.Route(t, "198.18.50.0/24", netip.MustParseAddr("198.18.40.2"))
			serveTCP(t, be, "198.18.40.2:8080", "backend\n")
			if _, err := ns.TryExec(t, kp, fl.binary(IPv4, "restore")); err != nil {
				t.Fatal(err)
			}
			ns.Exec(t, "ipset", "create", "cali40all-ipam-pools", "hash:net")
			ns.Exec(t, "ipset", "add", "cali40all-ipam-pools", "198.18.64.0/18")
			before := theirs(t, ns, IPv4, fl)
			if !strings.Contains(before, "-A FOREIGN-DNAT -s 198.18.52.0/24 -j KUBE-MARK-MASQ") {
				t.Fatalf("the node's rules are not in place:\n%s", before)
			}
			served := func(step string) {
				t.Helper()
				if got, err := fetch(t, ns, "198.18.50.10:80"); err != nil || got != "backend\n" {
					t.Fatalf("after %s, kube-proxy's service answered %q, %v", step, got, err)
				}
				if got := theirs(t, ns, IPv4, fl); got != before {
					t.Fatalf("after %s, foreign state changed (-before +after):\n%s", step, lineDiff(before, got))
				}
			}
			served("set-up")
			b := newIPTCfg(t, ns, IPTablesConfig{Family: IPv4, Flavor: fl})
			r := sampleFor(t, IPv4, fl, Options{})
			r.Add(VirtualServers, AddrPort(mustAddr("198.18.0.1"), TCP, 80))
			if err := b.Apply(testCtx(t), r); err != nil {
				t.Fatal(err)
			}
			checkIPT(t, ns, b, r)
			served("Apply")
			r.Add(ClusterIPSet, AddrPort(mustAddr("198.18.0.7"), TCP, 80))
			r.Clear(LoopBack)
			if err := b.Apply(testCtx(t), r); err != nil {
				t.Fatal(err)
			}
			checkIPT(t, ns, b, r)
			served("an incremental Apply")
			if ds, err := b.Check(testCtx(t)); err != nil || len(ds) != 0 {
				t.Fatalf("Check: %v\n%s", err, driftLines(ds))
			}
			served("Check")
			if err := b.Repair(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			served("Repair")
			o, err := b.Owned(testCtx(t))
			if err != nil || o == nil || !slices.Equal(o.Members(VirtualServers), r.Members(VirtualServers)) || !slices.Equal(o.Members(IPVSIPs), r.Members(IPVSIPs)) {
				t.Fatalf("Owned: %v %v", o, err)
			}
			served("Owned")
			if err := b.Cleanup(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			served("Cleanup")
			if all := everything(t, ns, IPv4); strings.Contains(all, "IPVSKIT") || strings.Contains(all, "ipvskit:") {
				t.Fatalf("Cleanup left something of ours:\n%s", all)
			}
		})
	}
}

// kubeProxyIPVS writes, in the flavor's tables of ns, the objects of a
// kube-proxy IPVS-mode node (its chains, rules and jumps, and its ipsets),
// which carry no mark of ours.
func kubeProxyIPVS(t *testing.T, ns *testutil.NetNS, f Family, fl Flavor) {
	t.Helper()
	kube := newIPTNames("ipvskit", true)
	r := sampleFor(t, f, fl, Options{})
	var sets strings.Builder
	for _, s := range Sets() {
		if !s.isIPSet() || s == VirtualServers {
			continue // kube-proxy has no ledger
		}
		spec := ipsetSpec(kube, f, s)
		extra := "family " + map[Family]string{IPv4: "inet", IPv6: "inet6"}[f]
		if spec.Family == 0 {
			extra = "range 0-65535"
		}
		fmt.Fprintf(&sets, "create %s %s %s\n", spec.Name, spec.Type, extra)
	}
	if _, err := ns.TryExec(t, []byte(sets.String()), "ipset", "restore"); err != nil {
		t.Fatal(err)
	}
	text := editLines(renderIPTablesText(r, kube), func(l string) string {
		if strings.Contains(l, `"ipvskit:`) || strings.Contains(l, kube.owner) {
			return ""
		}
		return l
	})
	text += "\n*nat\n-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n" +
		"-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n" +
		"-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING\nCOMMIT\n" +
		"*filter\n-A INPUT -m comment --comment \"kubernetes ipvs access filter\" -j KUBE-IPVS-FILTER\nCOMMIT\n"
	if _, err := ns.TryExec(t, []byte(text), fl.binary(f, "restore"), "--noflush"); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
}

// With KubeProxyNames, kube-proxy's own IPVS-mode objects are refused, not
// taken over: Apply, Owned and Cleanup return a ForeignError naming the
// first one and change nothing.
func TestIntegrationIPTablesKubeProxyNamesRefused(t *testing.T) {
	for _, fl := range flavors {
		for _, f := range []Family{IPv4, IPv6} {
			t.Run(fl.String()+"/"+f.String(), func(t *testing.T) {
				t.Parallel()
				ns := testutil.NewNetNS(t)
				kubeProxyIPVS(t, ns, f, fl)
				before := everything(t, ns, f)
				b := newIPTCfg(t, ns, IPTablesConfig{Family: f, Flavor: fl, KubeProxyNames: true})
				var fe *ForeignError
				if err := b.Apply(testCtx(t), sampleFor(t, f, fl, Options{})); !errors.As(err, &fe) || fe.Name != "nat KUBE-LOAD-BALANCER" || fe.Kind != "chain" {
					t.Fatalf("Apply: want a ForeignError on nat KUBE-LOAD-BALANCER, got %v", err)
				}
				if _, err := b.Owned(testCtx(t)); !errors.As(err, &fe) {
					t.Fatalf("Owned: want a ForeignError, got %v", err)
				}
				if err := b.Cleanup(testCtx(t)); !errors.As(err, &fe) {
					t.Fatalf("Cleanup: want a ForeignError, got %v", err)
				}
				if got := everything(t, ns, f); got != before {
					t.Fatalf("kube-proxy's objects changed (-before +after):\n%s", lineDiff(before, got))
				}
			})
		}
	}
}

// Foreign ipsets of our default names (another type, or our type but not
// referenced by our owner chain) are refused and never destroyed; ours are
// held by the owner chain's reference, through Replace's swap too.
func TestIntegrationIPTablesForeignIPSets(t *testing.T) {
	for _, fl := range flavors {
		t.Run(fl.String(), func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct{ name, create, reason string }{
				{"IPVSKIT-CLUSTER-IP", "hash:ip", "none from the owner chain"},
				{"IPVSKIT-IPVS-IPS", "hash:ip", "none from the owner chain"},
			} {
				ns := testutil.NewNetNS(t)
				ns.Exec(t, "ipset", "create", c.name, c.create)
				ns.Exec(t, "ipset", "add", c.name, "198.18.99.7")
				before := everything(t, ns, IPv4)
				b := newIPTCfg(t, ns, IPTablesConfig{Family: IPv4, Flavor: fl})
				var fe *ForeignError
				if err := b.Apply(testCtx(t), sampleFor(t, IPv4, fl, Options{})); !errors.As(err, &fe) || fe.Kind != "ipset" || fe.Name != c.name || !strings.Contains(fe.Reason, c.reason) {
					t.Fatalf("Apply: want a ForeignError on ipset %s, got %v", c.name, err)
				}
				if err := b.Cleanup(testCtx(t)); !errors.As(err, &fe) {
					t.Fatalf("Cleanup: want a ForeignError, got %v", err)
				}
				if got := everything(t, ns, IPv4); got != before {
					t.Fatalf("%s: the namespace changed (-before +after):\n%s", c.name, lineDiff(before, got))
				}
			}

			ns := testutil.NewNetNS(t)
			b := newIPTCfg(t, ns, IPTablesConfig{Family: IPv4, Flavor: fl})
			if o, err := b.Owned(testCtx(t)); o != nil || err != nil {
				t.Fatalf("Owned with nothing there: %v %v", o, err)
			}
			r := sampleFor(t, IPv4, fl, Options{})
			r.Add(VirtualServers, AddrPort(mustAddr("198.18.0.1"), TCP, 80), AddrPort(mustAddr("198.18.0.2"), SCTP, 9000))
			for _, apply := range []func() error{
				func() error { return b.Apply(testCtx(t), r) },
				func() error { return b.ApplyFull(testCtx(t), r) }, // Replace: temp set, swap, destroy
			} {
				if err := apply(); err != nil {
					t.Fatal(err)
				}
				if _, err := ns.TryExec(t, nil, "ipset", "destroy", "IPVSKIT-VIRTUAL-SERVERS"); err == nil {
					t.Fatal("an owned ipset could be destroyed: the owner chain holds no reference")
				}
				if !strings.Contains(ns.Exec(t, "ipset", "list", "-t", "IPVSKIT-VIRTUAL-SERVERS"), "References: 1\n") { // no rule but the owner chain reads it
					t.Fatal("the owner chain does not reference the set")
				}
			}
			fresh := newIPTCfg(t, ns, IPTablesConfig{Family: IPv4, Flavor: fl}) // a restarted process
			o, err := fresh.Owned(testCtx(t))
			if err != nil || o == nil || !slices.Equal(o.Members(VirtualServers), r.Members(VirtualServers)) || o.Len(ClusterIPSet) != 0 {
				t.Fatalf("Owned: %v %v", o, err)
			}
			if err := fresh.Cleanup(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			if all := everything(t, ns, IPv4); strings.Contains(all, "IPVSKIT") || strings.Contains(all, "ipvskit") {
				t.Fatalf("Cleanup by a restarted process left:\n%s", all)
			}
		})
	}
}

var initvalRE = regexp.MustCompile(` initval 0x[0-9a-f]+`)

// instanceLines are instance n's chains, rules, jumps and ipsets in ns.
func instanceLines(t *testing.T, ns *testutil.NetNS, f Family, fl Flavor, n *iptNames) string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strip(ns.Exec(t, fl.binary(f, "save"))), "\n") {
		if strings.Contains(l, ":"+n.prefix) || strings.Contains(l, " "+n.prefix) || strings.Contains(l, saveQuote(n.mark)) {
			out = append(out, l)
		}
	}
	for _, l := range strings.Split(ns.Exec(t, "ipset", "save"), "\n") {
		if fs := strings.Fields(l); len(fs) > 1 && strings.HasPrefix(fs[1], n.prefix) {
			out = append(out, initvalRE.ReplaceAllString(l, "")) // random per creation
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// Two instances in one namespace: each sees no drift, and each one's
// Cleanup leaves the other's chains, jumps and sets as they were.
func TestIntegrationIPTablesTwoInstances(t *testing.T) {
	for _, fl := range flavors {
		for _, f := range []Family{IPv4, IPv6} {
			t.Run(fl.String()+"/"+f.String(), func(t *testing.T) {
				t.Parallel()
				ns := testutil.NewNetNS(t)
				ra, rb := sampleFor(t, f, fl, Options{}), sampleFor(t, f, fl, Options{MasqueradeAll: true})
				rb.Clear(LoopBack)
				rb.Remove(NodePortTCP, Port(30080))
				a := newIPTCfg(t, ns, IPTablesConfig{Family: f, Flavor: fl, Instance: "a"})
				b := newIPTCfg(t, ns, IPTablesConfig{Family: f, Flavor: fl, Instance: "b"})
				na, nb := newIPTNames("a", false), newIPTNames("b", false)
				if err := a.Apply(testCtx(t), ra); err != nil {
					t.Fatal(err)
				}
				if err := b.Apply(testCtx(t), rb); err != nil {
					t.Fatal(err)
				}
				for _, x := range []*IPTablesBackend{a, b} {
					if ds, err := x.Check(testCtx(t)); err != nil || len(ds) != 0 {
						t.Fatalf("Check: %v\n%s", err, driftLines(ds))
					}
				}
				wantB, wantA := instanceLines(t, ns, f, fl, nb), instanceLines(t, ns, f, fl, na)
				for _, n := range []*iptNames{na, nb} {
					if want, _ := RenderIPTables(map[*iptNames]*Ruleset{na: ra, nb: rb}[n], &IPTablesConfig{Instance: n.instance}); ownedLinesOf(ns.Exec(t, fl.binary(f, "save")), n) != want {
						t.Fatalf("instance %s's chains differ from its render", n.instance)
					}
				}
				if err := a.Cleanup(testCtx(t)); err != nil {
					t.Fatal(err)
				}
				if got := instanceLines(t, ns, f, fl, nb); got != wantB {
					t.Fatalf("a's Cleanup changed b's objects (-before +after):\n%s", lineDiff(wantB, got))
				}
				if got := instanceLines(t, ns, f, fl, na); got != "" {
					t.Fatalf("a's Cleanup left:\n%s", got)
				}
				if err := a.Apply(testCtx(t), ra); err != nil {
					t.Fatal(err)
				}
				if got := instanceLines(t, ns, f, fl, na); got != wantA {
					t.Fatalf("a re-applied (-before +after):\n%s", lineDiff(wantA, got))
				}
				if err := b.Cleanup(testCtx(t)); err != nil {
					t.Fatal(err)
				}
				if got := instanceLines(t, ns, f, fl, na); got != wantA {
					t.Fatalf("b's Cleanup changed a's objects (-before +after):\n%s", lineDiff(wantA, got))
				}
				if ds, err := a.Check(testCtx(t)); err != nil || len(ds) != 0 {
					t.Fatalf("a's Check after b's Cleanup: %v\n%s", err, driftLines(ds))
				}
			})
		}
	}
}
