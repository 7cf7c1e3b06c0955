package iptables

import (
	"context"
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/ipset"
)

// defaultNames are the names of the default instance.
var defaultNames = newIPTNames("", false)

// Every name derived from a 12-byte instance fits the kernel's limits, in
// both families, and no two names of one instance collide; kube-proxy's
// names are exactly kube-proxy's.
func TestIPTablesNamesFit(t *testing.T) {
	for _, n := range []*iptNames{newIPTNames("abcdefghijkl", false), newIPTNames("a-b-c-d-e-f9", false), newIPTNames("a", false), newIPTNames("ipvskit", true)} {
		for _, table := range []string{"nat", "filter"} {
			seen := map[string]bool{}
			for _, c := range n.chains(table) {
				if len(c) > 28 || seen[c] || !strings.HasPrefix(c, n.prefix) && !n.kube {
					t.Errorf("%s: chain %q too long, repeated or without the prefix %q", n.instance, c, n.prefix)
				}
				seen[c] = true
			}
		}
		seen := map[string]bool{}
		for _, f := range []Family{IPv4, IPv6} {
			for _, s := range Sets() {
				name := n.ipset(s, f)
				if !s.isIPSet() {
					if name != "" {
						t.Errorf("%v is no ipset but got a name %q", s, name)
					}
					continue
				}
				if len(name) > 31 || seen[name] {
					t.Errorf("%s: ipset %q too long or repeated", n.instance, name)
				}
				seen[name] = true
			}
		}
	}
	n := newIPTNames("abcdefghijkl", false)
	if got := n.ipset(NodePortLocalSCTP, IPv6); got != "ABCDEFGHIJKL-6-NP-LOCAL-SCTP" {
		t.Errorf("IPv6 ipset name %q", got)
	}
	if n.ipsetsHaveFamilyPrefix(IPv6) != nil {
		t.Error(n.ipsetsHaveFamilyPrefix(IPv6))
	}
	k := newIPTNames("ipvskit", true)
	for _, c := range []struct{ got, want string }{
		{k.services, "KUBE-SERVICES"}, {k.sourceRanges, "KUBE-SOURCE-RANGES-FIREWALL"}, {k.owner, "KUBE-IPVSKIT-OWNER"},
		{k.ipset(VirtualServers, IPv4), "KUBE-VIRTUAL-SERVERS"}, {k.ipset(NodePortSCTP, IPv4), "KUBE-NODE-PORT-SCTP-HASH"},
		{k.ipset(LoadBalancerSourceCIDR, IPv6), "KUBE-6-LOAD-BALANCER-SOURCE-CID"}, {k.mark, "ipvskit:ipvskit"},
		{defaultNames.services, "IPVSKIT-SERVICES"}, {defaultNames.ipset(ClusterIPSet, IPv6), "IPVSKIT-6-CLUSTER-IP"},
		{newIPTNames("b", false).mark, "ipvskit:b"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// ipsetsHaveFamilyPrefix checks that every IPv6 name starts P-6-.
func (n *iptNames) ipsetsHaveFamilyPrefix(f Family) error {
	for name := range n.ipsets(f) {
		if !strings.HasPrefix(name, n.prefix+"6-") {
			return errors.New("IPv6 ipset without the family prefix: " + name)
		}
	}
	return nil
}

// Every owned chain starts with the marker, the jumps carry the mark and
// the owner chain references every owned ipset with its dimension's flags.
func TestIPTablesMarkerRendering(t *testing.T) {
	n := newIPTNames("a", false)
	text, err := RenderIPTables(sample(IPv6, Options{}), &IPTablesConfig{Instance: "a"})
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]string{}
	var table string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "*") {
			table = l[1:]
		}
		if c, _, ok := strings.Cut(strings.TrimPrefix(l, "-A "), " "); ok && strings.HasPrefix(l, "-A ") && first[table+" "+c] == "" {
			first[table+" "+c] = l
		}
		if strings.Contains(l, "KUBE") || strings.Contains(l, "IPVSKIT") {
			t.Errorf("a name not derived from the instance: %q", l)
		}
	}
	for _, table := range []string{"nat", "filter"} {
		for _, c := range n.chains(table) {
			if got := first[table+" "+c]; got != `-A `+c+` -m comment --comment "ipvskit:a"` {
				t.Errorf("%s %s starts with %q, not the marker", table, c, got)
			}
		}
	}
	for _, want := range []string{
		`-A A-OWNER -m set --match-set A-6-CLUSTER-IP dst,dst -m comment --comment "ipvskit:a"`,
		`-A A-OWNER -m set --match-set A-6-IPVS-IPS dst -m comment --comment "ipvskit:a"`,
		`-A A-OWNER -m set --match-set A-6-NODE-PORT-TCP dst -m comment --comment "ipvskit:a"`,
		`-A A-OWNER -m set --match-set A-6-LOOP-BACK dst,dst,dst -m comment --comment "ipvskit:a"`,
		`-A A-OWNER -m set --match-set A-6-LB-SOURCE-CIDR dst,dst,dst -m comment --comment "ipvskit:a"`,
		`-A A-OWNER -m set --match-set A-6-VIRTUAL-SERVERS dst,dst -m comment --comment "ipvskit:a"`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("the owner chain lacks %q", want)
		}
	}
	if got := strings.Count(text, "-A A-OWNER -m set"); got != numSets-1 {
		t.Errorf("the owner chain references %d sets, want %d", got, numSets-1)
	}
	for _, l := range strings.Split(strings.TrimSpace(RenderIPTablesJumps(&IPTablesConfig{Instance: "a"})), "\n") {
		if !strings.Contains(l, ` -m comment --comment "ipvskit:a" -j A-`) {
			t.Errorf("jump rule without the mark: %q", l)
		}
	}
	var ve *ValidationError
	if _, err := RenderIPTables(sample(IPv4, Options{}), &IPTablesConfig{Instance: "Kube"}); !errors.As(err, &ve) || ve.Field != "IPTablesConfig.Instance" {
		t.Errorf("a bad instance: %v", err)
	}
}

// kubeProxyIPVSSave is what iptables-save shows on a kube-proxy IPVS-mode
// node (an excerpt): KUBE-* chains of our KubeProxyNames, without a marker.
const kubeProxyIPVSSave = `*nat
:PREROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-MARK-MASQ - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
COMMIT
`

// The ownership decision, from iptables-save and ipset header texts.
func TestIPTablesOwnershipDecision(t *testing.T) {
	r := sample(IPv4, Options{})
	ours := parseSave(savedText(r, nil))
	heads := func(extra ...ipset.SetInfo) []ipset.SetInfo {
		var out []ipset.SetInfo
		for _, s := range Sets() {
			if s.isIPSet() {
				out = append(out, ipset.SetInfo{Set: ipsetSpec(defaultNames, IPv4, s), References: 1})
			}
		}
		return append(out, extra...)
	}
	foreignErr := func(t *testing.T, err error, kind, name, reason string) {
		t.Helper()
		var fe *ForeignError
		if !errors.As(err, &fe) || fe.Kind != kind || fe.Name != name || !strings.Contains(fe.Reason, reason) || !errors.Is(err, fs.ErrExist) {
			t.Fatalf("want a ForeignError on %s %s (%s), got %v", kind, name, reason, err)
		}
	}
	t.Run("ours", func(t *testing.T) {
		o, err := decideOwnership(defaultNames, IPv4, map[Flavor]saved{FlavorNFT: ours}, heads(ipset.SetInfo{Set: ipset.Set{Name: "KUBE-CLUSTER-IP", Type: ipset.HashIP}}), nil, true, true)
		if err != nil || len(o.sets) != numSets-1 || len(o.chains[FlavorNFT]) != 12 || o.empty() {
			t.Fatalf("%v %+v", err, o)
		}
	})
	t.Run("nothing", func(t *testing.T) {
		o, err := decideOwnership(defaultNames, IPv4, map[Flavor]saved{FlavorNFT: parseSave(kubeProxyIPVSSave)}, nil, nil, true, true)
		if err != nil || !o.empty() {
			t.Fatalf("kube-proxy's objects are not of the default instance's names: %v %+v", err, o)
		}
	})
	t.Run("kube-proxy's chains", func(t *testing.T) {
		_, err := decideOwnership(newIPTNames("ipvskit", true), IPv4, map[Flavor]saved{FlavorLegacy: parseSave(kubeProxyIPVSSave)}, nil, nil, true, false)
		foreignErr(t, err, "chain", "nat KUBE-MARK-MASQ", "first rule -A KUBE-MARK-MASQ -j MARK")
	})
	t.Run("kube-proxy's chains, adopting", func(t *testing.T) {
		b := &iptBackend{fam: IPv4, names: newIPTNames("ipvskit", true), adopting: true}
		o, err := decideOwnership(b.names, IPv4, map[Flavor]saved{FlavorLegacy: parseSave(kubeProxyIPVSSave)}, nil, b.adoptable([]Flavor{FlavorLegacy}), true, false)
		if err != nil || !o.chains[FlavorLegacy]["nat KUBE-MARK-MASQ"] || !o.chains[FlavorLegacy]["nat KUBE-SERVICES"] {
			t.Fatalf("adopting: %v %+v", err, o)
		}
		// Not the default instance's names: nothing of kube-proxy's is taken.
		b.names = defaultNames
		if o, err := decideOwnership(b.names, IPv4, map[Flavor]saved{FlavorLegacy: parseSave(kubeProxyIPVSSave)}, nil, b.adoptable([]Flavor{FlavorLegacy}), true, false); err != nil || !o.empty() {
			t.Fatalf("adopting under the instance's own names: %v %+v", err, o)
		}
	})
	t.Run("flushed chain", func(t *testing.T) {
		s := parseSave(editLines(savedText(r, nil), func(l string) string {
			if strings.HasPrefix(l, "-A IPVSKIT-SERVICES ") {
				return ""
			}
			return l
		}))
		_, err := decideOwnership(defaultNames, IPv4, map[Flavor]saved{FlavorNFT: s}, heads(), nil, true, false)
		foreignErr(t, err, "chain", "nat IPVSKIT-SERVICES", "no rules")
		// Unless the back end knows it wrote it.
		if _, err := decideOwnership(defaultNames, IPv4, map[Flavor]saved{FlavorNFT: s}, heads(), map[string]bool{knownChain(FlavorNFT, "nat", "IPVSKIT-SERVICES"): true}, true, false); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("marker of another instance", func(t *testing.T) {
		_, err := decideOwnership(newIPTNames("ipvskit", false), IPv4, map[Flavor]saved{FlavorNFT: parseSave(strings.ReplaceAll(savedText(r, nil), "ipvskit:ipvskit", "ipvskit:other"))}, nil, nil, true, false)
		foreignErr(t, err, "chain", "nat IPVSKIT-LOAD-BALANCER", `not the marker "ipvskit:ipvskit"`)
	})
	t.Run("unreferenced set", func(t *testing.T) {
		s := parseSave(editLines(savedText(r, nil), func(l string) string {
			if strings.Contains(l, "--match-set IPVSKIT-IPVS-IPS dst -m comment") {
				return ""
			}
			return l
		}))
		_, err := decideOwnership(defaultNames, IPv4, map[Flavor]saved{FlavorNFT: s}, heads(), nil, true, false)
		foreignErr(t, err, "ipset", "IPVSKIT-IPVS-IPS", "none from the owner chain filter IPVSKIT-OWNER")
		// Referenced from another flavor's owner chain: ours.
		if _, err := decideOwnership(defaultNames, IPv4, map[Flavor]saved{FlavorNFT: s, FlavorLegacy: ours}, heads(), nil, true, false); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("set of another type", func(t *testing.T) {
		h := heads()
		for i := range h {
			if h[i].Name == "IPVSKIT-CLUSTER-IP" {
				h[i].Type = ipset.HashIP
			}
		}
		_, err := decideOwnership(defaultNames, IPv4, map[Flavor]saved{FlavorNFT: ours}, h, nil, true, false)
		foreignErr(t, err, "ipset", "IPVSKIT-CLUSTER-IP", "type hash:ip family inet, the back end writes hash:ip,port")
		if _, err := decideOwnership(defaultNames, IPv4, map[Flavor]saved{FlavorNFT: ours}, h, nil, false, false); err != nil {
			t.Fatalf("Cleanup does not look at types: %v", err)
		}
	})
	t.Run("foreign jump into an owned chain", func(t *testing.T) {
		s := parseSave(strings.Replace(savedText(r, nil), "*nat\n", "*nat\n-A OUTPUT -d 198.18.99.1/32 -j IPVSKIT-SERVICES\n", 1))
		if _, err := decideOwnership(defaultNames, IPv4, map[Flavor]saved{FlavorNFT: s}, heads(), nil, true, false); err != nil {
			t.Fatalf("Apply does not care: %v", err)
		}
		_, err := decideOwnership(defaultNames, IPv4, map[Flavor]saved{FlavorNFT: s}, heads(), nil, false, true)
		foreignErr(t, err, "rule", "nat -A OUTPUT -d 198.18.99.1/32 -j IPVSKIT-SERVICES", "without the mark")
	})
}

// The back end refuses before changing anything, and Cleanup removes only
// what carries the mark.
func TestIPTablesForeignRefusedBeforeTouching(t *testing.T) {
	ctx := context.Background()
	sets, run := &fakeSets{}, &fakeRun{}
	b := &iptBackend{fam: IPv4, flavor: FlavorLegacy, names: newIPTNames("ipvskit", true), sets: sets, run: run}
	if _, err := run.run(ctx, []byte(kubeProxyIPVSSave), "iptables-legacy-restore"); err != nil {
		t.Fatal(err)
	}
	sets.set(ipset.Set{Name: "KUBE-CLUSTER-IP", Type: ipset.HashIPPort, Family: inet.IPv4})
	run.calls, run.inputs, sets.calls = nil, nil, nil
	var fe *ForeignError
	if err := b.apply(ctx, b, sample(IPv4, Options{}), false); !errors.As(err, &fe) || fe.Name != "nat KUBE-MARK-MASQ" {
		t.Fatalf("want a ForeignError on KUBE-MARK-MASQ, got %v", err)
	}
	if len(run.inputs) != 0 || count(sets.calls, "replace") != 0 {
		t.Fatalf("Apply changed something before refusing: %v %v", run.inputs, sets.calls)
	}
	if err := b.cleanup(ctx, b); !errors.As(err, &fe) {
		t.Fatalf("Cleanup: want a ForeignError, got %v", err)
	}
	if len(run.inputs) != 0 || count(sets.calls, "destroy") != 0 {
		t.Fatalf("Cleanup changed something: %v %v", run.inputs, sets.calls)
	}

	// Cleanup of a default instance that applied beside kube-proxy's
	// objects: only the marked objects go.
	b = &iptBackend{fam: IPv4, flavor: FlavorLegacy, names: defaultNames, sets: sets, run: run}
	if err := b.apply(ctx, b, sample(IPv4, Options{}), false); err != nil {
		t.Fatal(err)
	}
	b.known = nil // as after a restart: only the marks prove anything
	if err := b.cleanup(ctx, b); err != nil {
		t.Fatal(err)
	}
	got, _ := run.run(ctx, nil, "iptables-legacy-save")
	if strings.Contains(string(got), "IPVSKIT") || !strings.Contains(string(got), "-A KUBE-MARK-MASQ -j MARK") || !strings.Contains(string(got), `-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`) {
		t.Fatalf("after Cleanup:\n%s", got)
	}
	if len(sets.sets) != 1 || sets.sets["KUBE-CLUSTER-IP"] == nil {
		t.Fatalf("Cleanup destroyed the wrong sets: %v", sets.calls)
	}
}

// A failed iptables-restore names the line it failed at, as sent, with its
// table, and the module its messages say is missing.
func TestIPTablesRestoreErrors(t *testing.T) {
	r := sample(IPv4, Options{})
	text := renderIPTablesText(r, defaultNames)
	lines := strings.Split(text, "\n")
	natAt := func(prefix string) int {
		inNat := false
		for i, l := range lines {
			inNat = inNat || l == "*nat"
			if inNat && strings.HasPrefix(l, prefix) {
				return i + 1
			}
		}
		t.Fatalf("no line %q", prefix)
		return 0
	}
	mm := natAt("-A IPVSKIT-MARK-MASQ -j MARK")
	for _, c := range []struct {
		name, stderr string
		line         int
		table        string
		module       string
	}{
		{"legacy commit", "Warning: Extension MARK revision 0 not supported, missing kernel module?\niptables-restore: line " + strconv.Itoa(mm) + " failed", mm, "nat", "xt_mark"},
		{"nft", "Warning: Extension set revision 0 not supported, missing kernel module?\niptables-nft-restore v1.8.9 (nf_tables): \nline 5: RULE_APPEND failed (No such file or directory): rule in chain IPVSKIT-FORWARD", 5, "filter", "xt_set"},
		{"parse", "iptables-restore v1.8.9 (legacy): Couldn't load target `MASQUERADE':No such file or directory\n\nError occurred at line: " + strconv.Itoa(natAt("-A IPVSKIT-POSTROUTING -m comment --comment \"kubernetes")), natAt("-A IPVSKIT-POSTROUTING -m comment --comment \"kubernetes"), "nat", "xt_MASQUERADE"},
		{"physdev", "Warning: Extension physdev revision 0 not supported, missing kernel module?\niptables-restore: line 3 failed", 3, "filter", "xt_physdev"},
		{"no line", "iptables-restore: unable to initialize table 'nat'", 0, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, _, run := newFakeIPT(t)
			run.restoreErr = errors.New("exit status 1: " + c.stderr)
			err := b.apply(context.Background(), b, r, false)
			var re *RestoreError
			if !errors.As(err, &re) {
				t.Fatalf("want a RestoreError, got %v", err)
			}
			want := ""
			if c.line > 0 {
				want = lines[c.line-1]
			}
			if re.Line != c.line || re.Table != c.table || re.Text != want || re.Module != c.module || re.Binary != "iptables-nft-restore" {
				t.Fatalf("got line %d table %q text %q module %q; want %d %q %q %q", re.Line, re.Table, re.Text, re.Module, c.line, c.table, want, c.module)
			}
			if c.line > 0 && !strings.Contains(err.Error(), want) || c.module != "" && (!strings.Contains(err.Error(), c.module) || !errors.Is(err, ErrNotSupported)) {
				t.Fatalf("the message lacks the line or the module: %v", err)
			}
			if c.module == "" && errors.Is(err, ErrNotSupported) {
				t.Fatal("no module, yet ErrNotSupported")
			}
		})
	}
}
