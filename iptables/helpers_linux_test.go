package iptables

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func famName(f Family) string {
	if f == IPv6 {
		return "ip6"
	}
	return "ip"
}

var elementsRE = regexp.MustCompile(`(?s)elements = \{([^}]*)\}`)

// normNFT sorts the elements of every set in an `nft list` output, which
// nft prints in hash order.
func normNFT(s string) string {
	return elementsRE.ReplaceAllStringFunc(s, func(m string) string {
		body := elementsRE.FindStringSubmatch(m)[1]
		var els []string
		for _, e := range strings.Split(body, ",") {
			if e = strings.TrimSpace(e); e != "" {
				els = append(els, e)
			}
		}
		slices.Sort(els)
		return "elements = { " + strings.Join(els, ", ") + " }"
	})
}

// listTable lists the owned table in ns, normalised.
func listTable(t *testing.T, ns *testutil.NetNS, f Family, table string) string {
	t.Helper()
	return normNFT(ns.Exec(t, "nft", "-y", "-s", "list", "table", famName(f), table))
}

// scriptListing applies RenderNFT's script with nft -f in a fresh namespace
// and lists the table there.
func scriptListing(t *testing.T, r *Ruleset) string {
	t.Helper()
	script, err := RenderNFT(r, "")
	if err != nil {
		t.Fatal(err)
	}
	ns := testutil.NewNetNS(t)
	if _, err := ns.TryExec(t, []byte(script), "nft", "-f", "-"); err != nil {
		t.Fatalf("nft -f of the rendered script: %v\n%s", err, script)
	}
	return listTable(t, ns, r.family(), DefaultTable)
}

// ownedLines keeps, from iptables-save output, the table headers, COMMITs
// and the default instance's owned chains' declarations and rules of nat
// and filter, in iptables-save's order: comparable with RenderIPTables.
func ownedLines(save string) string { return ownedLinesOf(save, newIPTNames("", false)) }

// ownedLinesOf is ownedLines for the chains named n.
func ownedLinesOf(save string, n *iptNames) string {
	owned := map[string]map[string]bool{"nat": {}, "filter": {}}
	for _, c := range n.natChains() {
		owned["nat"][c] = true
	}
	for _, c := range n.filterChains() {
		owned["filter"][c] = true
	}
	tables := map[string][]string{}
	var cur string
	for _, l := range strings.Split(save, "\n") {
		switch {
		case strings.HasPrefix(l, "*"):
			cur = l[1:]
		case l == "COMMIT" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, ":"):
			name, _, _ := strings.Cut(l[1:], " ")
			if owned[cur][name] {
				tables[cur] = append(tables[cur], ":"+name+" - [0:0]")
			}
		case strings.HasPrefix(l, "-A "):
			name, _, _ := strings.Cut(l[3:], " ")
			if owned[cur][name] {
				tables[cur] = append(tables[cur], l)
			}
		}
	}
	var b strings.Builder
	for _, t := range []string{"filter", "nat"} {
		if len(tables[t]) == 0 {
			continue
		}
		b.WriteString("*" + t + "\n" + strings.Join(tables[t], "\n") + "\nCOMMIT\n")
	}
	return b.String()
}

// ipsetMembers returns "add NAME member" lines of the owned ipsets in ns,
// sorted.
func ipsetMembers(t *testing.T, ns *testutil.NetNS, f Family) []string {
	t.Helper()
	names := map[string]bool{}
	for name := range newIPTNames("", false).ipsets(f) {
		names[name] = true
	}
	var out []string
	for _, l := range strings.Split(ns.Exec(t, "ipset", "save"), "\n") {
		fs := strings.Fields(l)
		if len(fs) == 3 && fs[0] == "add" && names[fs[1]] {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// wantIPSetMembers is what ipsetMembers should return for r.
func wantIPSetMembers(r *Ruleset) []string {
	var out []string
	for _, s := range Sets() {
		if !s.isIPSet() {
			continue
		}
		for _, m := range r.Members(s) {
			// ipset prints a host network as a bare address.
			line := "add " + newIPTNames("", false).ipset(s, r.family()) + " " + m.String()
			if m.Net.IsValid() && m.Net.IsSingleIP() {
				line = strings.TrimSuffix(line, "/"+strconv.Itoa(m.Net.Bits()))
			}
			out = append(out, line)
		}
	}
	slices.Sort(out)
	return out
}

// mutate changes r at random: adds or removes a few members of random sets.
func mutate(rng *rand.Rand, r *Ruleset) {
	f := r.family()
	addr := func() netip.Addr {
		if f == IPv6 {
			return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(rng.IntN(6))})
		}
		return netip.AddrFrom4([4]byte{198, 18, 7, byte(rng.IntN(6))})
	}
	for range 1 + rng.IntN(4) {
		s := Sets()[rng.IntN(numSets)]
		if ms := r.Members(s); len(ms) > 0 && rng.IntN(2) == 0 {
			r.Remove(s, ms[rng.IntN(len(ms))])
			continue
		}
		port := uint16(30000 + rng.IntN(5))
		proto := []Protocol{TCP, UDP, SCTP}[rng.IntN(3)]
		if s == NodePortSCTP || s == NodePortLocalSCTP {
			proto = SCTP
		}
		var m Member
		switch s.Shape() {
		case ShapeAddr:
			m = Addr(addr())
		case ShapePort:
			m = Port(port)
		case ShapeAddrPort:
			m = AddrPort(addr(), proto, port)
		case ShapeAddrPortAddr:
			a := addr()
			m = AddrPortAddr(a, proto, port, a)
		case ShapeAddrPortNet:
			bits := []int{16, 24, 32}[rng.IntN(3)]
			if f == IPv6 {
				bits = []int{48, 64, 128}[rng.IntN(3)]
			}
			m = AddrPortNet(addr(), proto, port, netip.PrefixFrom(addr(), bits).Masked())
		}
		r.Add(s, m)
	}
}
