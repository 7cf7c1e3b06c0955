package proxier_test

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/proxier"
)

var (
	counters = regexp.MustCompile(`packets \d+ bytes \d+|\[\d+:\d+\]`)
	initval  = regexp.MustCompile(` initval 0x[0-9a-f]+`)
	elements = regexp.MustCompile(`(?s)elements = \{[^}]*\}`)
)

// normalize makes the reference tools' output comparable from one run to
// the next, keeping every fact and dropping only what a run cannot
// control: the order of hash tables and of creation (IPVS and ipset lines,
// nft set elements, nft tables, chains and sets, iptables-save tables and
// chains: but never the order of the rules in a chain), counters, ipset
// hash seeds, the VIP link's interface index, comments.
func normalize(s map[string]string) map[string]string {
	out := map[string]string{}
	for sec, text := range s {
		text = initval.ReplaceAllString(counters.ReplaceAllString(text, "[counters]"), "")
		switch {
		case sec == "ipvsadm" || sec == "ipset" || sec == "route":
			out[sec] = strings.Join(sorted(lines(text)), "\n")
		case sec == "addr":
			out[sec] = vipAddrs(text)
		case sec == "nft":
			out[sec] = normalizeNFT(text)
		case strings.Contains(sec, "tables-"):
			out[sec] = normalizeSave(text)
		default:
			out[sec] = text
		}
	}
	return out
}

// lines are text's non-empty lines, without comments and trailing blanks.
func lines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimRight(l, " \t"); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func sorted(l []string) []string { slices.Sort(l); return l }

// vipAddrs are the VIP link's addresses in ip -o addr output, as "inet
// 198.18.100.1/32", sorted.
func vipAddrs(text string) string {
	var out []string
	for _, l := range lines(text) {
		if f := strings.Fields(l); len(f) >= 4 && f[1] == proxier.DefaultLinkName {
			out = append(out, f[2]+" "+f[3])
		}
	}
	return strings.Join(sorted(out), "\n")
}

// normalizeNFT sorts the elements of each set, the tables, and the chains
// and sets of each table.
func normalizeNFT(text string) string {
	text = elements.ReplaceAllStringFunc(text, func(e string) string {
		items := strings.Split(strings.TrimSuffix(strings.TrimPrefix(e, "elements = {"), "}"), ",")
		for i := range items {
			items[i] = strings.Join(strings.Fields(items[i]), " ")
		}
		return "elements = { " + strings.Join(sorted(items), ", ") + " }"
	})
	var tables []string
	var table, block []string
	var blocks []string
	depth := 0
	for _, l := range lines(text) {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasSuffix(t, "{"):
			depth++
		case t == "}":
			depth--
		}
		switch {
		case depth == 0 && t == "}": // a table ends
			slices.Sort(blocks)
			tables = append(tables, strings.Join(append(append(table, blocks...), l), "\n"))
			table, blocks = nil, nil
		case depth == 1 && t == "}": // a chain or set ends
			blocks = append(blocks, strings.Join(append(block, l), "\n"))
			block = nil
		case depth == 1 && block == nil && !strings.HasSuffix(t, "{"):
			table = append(table, l) // a table's own line (flags, comment)
		case depth == 1 && block == nil:
			table = append(table, l) // the table's header
		default:
			block = append(block, l)
		}
	}
	return strings.Join(sorted(tables), "\n")
}

// normalizeSave sorts iptables-save's tables, each table's chain
// declarations, and its rules by chain (keeping their order in a chain).
func normalizeSave(text string) string {
	var tables []string
	var decl, rules []string
	var name string
	for _, l := range lines(text) {
		switch {
		case strings.HasPrefix(l, "*"):
			name, decl, rules = l, nil, nil
		case strings.HasPrefix(l, ":"):
			decl = append(decl, l)
		case strings.HasPrefix(l, "-A "):
			rules = append(rules, l)
		case l == "COMMIT":
			slices.SortStableFunc(rules, func(x, y string) int { return cmp.Compare(strings.Fields(x)[1], strings.Fields(y)[1]) })
			tables = append(tables, strings.Join(append(append([]string{name}, sorted(decl)...), rules...), "\n")+"\nCOMMIT")
		}
	}
	return strings.Join(sorted(tables), "\n")
}

func TestNormalizeKeepsFactsAndDropsOrder(t *testing.T) {
	nftA := "table ip ipvskit {\n\tset b {\n\t\ttype ipv4_addr\n\t\telements = { 198.18.0.2, 198.18.0.1 }\n\t}\n\tchain a {\n\t\tip daddr @b counter packets 3 bytes 180 accept\n\t\tdrop\n\t}\n}\n" +
		"table ip foreign {\n\tchain c {\n\t}\n}\n"
	nftB := "table ip foreign {\n\tchain c {\n\t}\n}\n" +
		"table ip ipvskit {\n\tchain a {\n\t\tip daddr @b counter packets 0 bytes 0 accept\n\t\tdrop\n\t}\n\tset b {\n\t\ttype ipv4_addr\n\t\telements = { 198.18.0.1,\n\t\t\t     198.18.0.2 }\n\t}\n}\n"
	nftRulesSwapped := strings.Replace(strings.Replace(nftB, "\t\tdrop\n", "", 1), "\tchain a {\n", "\tchain a {\n\t\tdrop\n", 1)
	nftElementGone := strings.Replace(nftB, "198.18.0.1,", "", 1)
	saveA := "# Generated\n*nat\n:PREROUTING ACCEPT [5:300]\n:KUBE-B - [0:0]\n:KUBE-A - [0:0]\n-A KUBE-B -j RETURN\n-A KUBE-A -p tcp -j ACCEPT\n-A KUBE-A -j DROP\nCOMMIT\n*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n"
	saveB := "*filter\n:INPUT ACCEPT [9:9]\nCOMMIT\n*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-A - [0:0]\n:KUBE-B - [0:0]\n-A KUBE-A -p tcp -j ACCEPT\n-A KUBE-A -j DROP\n-A KUBE-B -j RETURN\nCOMMIT\n"
	saveRulesSwapped := strings.Replace(strings.Replace(saveB, "-A KUBE-A -j DROP\n", "", 1), "-A KUBE-A -p tcp", "-A KUBE-A -j DROP\n-A KUBE-A -p tcp", 1)
	addrA := "5: ipvskit0    inet 198.18.100.2/32 scope global ipvskit0\n5: ipvskit0    inet 198.18.100.1/32 scope global ipvskit0\n2: eth0    inet 198.18.20.1/24\n"
	addrB := "9: ipvskit0    inet 198.18.100.1/32 scope global ipvskit0\n9: ipvskit0    inet 198.18.100.2/32 scope global ipvskit0\n"
	ipsetA := "create KUBE-X hash:ip family inet hashsize 1024 initval 0x1234abcd\nadd KUBE-X 198.18.0.2\nadd KUBE-X 198.18.0.1\n"
	ipsetB := "create KUBE-X hash:ip family inet hashsize 1024 initval 0x99999999\nadd KUBE-X 198.18.0.1\nadd KUBE-X 198.18.0.2\n"
	for _, c := range []struct {
		sec, x, y string
		same      bool
	}{
		{"nft", nftA, nftB, true},
		{"nft", nftA, nftRulesSwapped, false},
		{"nft", nftA, nftElementGone, false},
		{"iptables-nft", saveA, saveB, true},
		{"iptables-nft", saveA, saveRulesSwapped, false},
		{"addr", addrA, addrB, true},
		{"addr", addrA, addrB[:strings.Index(addrB, "\n")+1], false},
		{"ipset", ipsetA, ipsetB, true},
		{"ipset", ipsetA, strings.Replace(ipsetB, "198.18.0.2", "198.18.0.3", 1), false},
	} {
		x, y := normalize(map[string]string{c.sec: c.x})[c.sec], normalize(map[string]string{c.sec: c.y})[c.sec]
		if (x == y) != c.same {
			t.Errorf("%s: normalized equal %v, want %v:\n%s\n---\n%s", c.sec, x == y, c.same, x, y)
		}
	}
}
