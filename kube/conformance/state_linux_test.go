package conformance

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// kernelState is what a node holds, as Debian's own tools print it,
// normalised so that two nodes with the same meaning print the same: lines
// sorted, counters and hash parameters dropped.
type kernelState struct {
	ipvs     []string // ipvsadm -Sn
	vips     []string // addresses on kube-ipvs0
	ipsets   []string // ipset save: create NAME TYPE family, add NAME ENTRY
	iptables []string // iptables-save and ip6tables-save: table, chain, rule
	rules    []string // the same, in the order the tools print them
	// conns is each destination's active plus inactive connections
	// (ipvsadm -Ln), by destKey's key.
	conns map[string]int
}

// ruleOrder returns each chain's rules in order ("iptables nat -A CHAIN"
// prefix as key), leaving out the lines a deliberate difference explains
// (sign is "-" for kube-proxy's lines, "+" for ipvskit's).
func ruleOrder(rules []string, sign string) map[string][]string {
	out := map[string][]string{}
	for _, l := range rules {
		f := strings.Fields(l)
		if len(f) < 4 || f[2] != "-A" {
			continue
		}
		if _, ok := undeliberate([]string{"iptables " + sign + " " + l}); len(ok) > 0 {
			continue
		}
		k := strings.Join(f[:4], " ")
		out[k] = append(out[k], l)
	}
	return out
}

func readState(t *testing.T, r *rig) kernelState {
	t.Helper()
	var s kernelState
	s.ipvs = sorted(lines(r.node.Exec(t, "ipvsadm", "-Sn")))
	s.conns = connections(r.node.Exec(t, "ipvsadm", "-Ln"))
	for _, l := range lines(r.node.Exec(t, "ip", "-o", "addr", "show", "dev", "kube-ipvs0")) {
		if f := strings.Fields(l); len(f) > 3 && (f[2] == "inet" || f[2] == "inet6") && !strings.HasPrefix(f[3], "fe80:") {
			s.vips = append(s.vips, f[3])
		}
	}
	s.vips = sorted(s.vips)
	s.ipsets = normIPSets(r.node.Exec(t, "ipset", "save"))
	for _, tool := range []string{"iptables-save", "ip6tables-save"} {
		s.iptables = append(s.iptables, normIPTables(tool, r.node.Exec(t, tool))...)
	}
	s.rules = slices.Clone(s.iptables)
	s.iptables = sorted(s.iptables)
	return s
}

var hashParams = regexp.MustCompile(` (hashsize|maxelem|bucketsize|initval|timeout) \S+`)

func normIPSets(save string) []string {
	var out []string
	for _, l := range lines(save) {
		out = append(out, hashParams.ReplaceAllString(l, ""))
	}
	return sorted(out)
}

var (
	counters = regexp.MustCompile(`^(:\S+ \S+) \[\d+:\d+\]$`)
	comments = regexp.MustCompile(` -m comment --comment ("[^"]*"|\S+)`)
)

// normIPTables keeps every chain and rule with its table, without counters
// and comments (kube-proxy's comments are prose; ours carry the mark).
func normIPTables(tool, save string) []string {
	var out []string
	table := ""
	for _, l := range lines(save) {
		switch {
		case strings.HasPrefix(l, "#"), l == "COMMIT":
		case strings.HasPrefix(l, "*"):
			table = l[1:]
		default:
			l = counters.ReplaceAllString(l, "$1")
			l = comments.ReplaceAllString(l, "")
			out = append(out, tool[:len(tool)-5]+" "+table+" "+l)
		}
	}
	return out
}

// diff returns the lines only in a ("-") and only in b ("+").
func diff(a, b []string) []string {
	var out []string
	for _, l := range a {
		if !slices.Contains(b, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range b {
		if !slices.Contains(a, l) {
			out = append(out, "+ "+l)
		}
	}
	return out
}

// deliberate are the differences from kube-proxy that ipvskit makes on
// purpose, each documented in docs/kube-proxy-differences.md: a diff line
// ("- " kube-proxy only, "+ " ipvskit only) that matches one is not a
// failure.
var deliberate = []difference{
	{"ownership: a marker rule first in every chain", regexp.MustCompile(`^iptables \+ \S+ \S+ -A \S+$`)},
	{"ownership: the owner chain that holds every set", regexp.MustCompile(`KUBE-IPVSKIT-OWNER`)},
	{"ownership: the ledger of virtual servers", regexp.MustCompile(`^ipset \+ (create|add) KUBE-(6-)?VIRTUAL-SERVERS `)},
}

// difference is one deliberate difference: what it is (the heading in the
// docs) and the diff lines it explains.
type difference struct {
	what    string
	pattern *regexp.Regexp
}

// undeliberate splits diff lines into those no deliberate difference
// explains and those one does.
func undeliberate(d []string) (bad, ok []string) {
	for _, l := range d {
		if slices.ContainsFunc(deliberate, func(x difference) bool { return x.pattern.MatchString(l) }) {
			ok = append(ok, l)
		} else {
			bad = append(bad, l)
		}
	}
	return bad, ok
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func sorted(s []string) []string { slices.Sort(s); return s }
