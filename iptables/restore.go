package iptables

import (
	"fmt"
	"slices"
	"strings"
)

// The chains the iptables back end owns, per table. Each is declared (and so
// flushed) and rewritten by every restore; nothing else is touched.
var (
	natChains = []string{
		"KUBE-LOAD-BALANCER", "KUBE-MARK-MASQ", "KUBE-NODE-PORT", "KUBE-POSTROUTING", "KUBE-SERVICES",
	}
	filterChains = []string{
		"KUBE-FORWARD", "KUBE-IPVS-FILTER", "KUBE-IPVS-OUT-FILTER", "KUBE-NODE-PORT",
		"KUBE-PROXY-FIREWALL", "KUBE-SOURCE-RANGES-FIREWALL",
	}
)

// jumpRule is a rule in a built-in chain that leads into an owned chain.
type jumpRule struct {
	table, chain, spec string
}

// jumpRules are the rules that lead from the built-in chains into the owned
// ones, in the order kube-proxy inserts them (each at position 1).
var jumpRules = []jumpRule{
	{"nat", "OUTPUT", `-m comment --comment "kubernetes service portals" -j KUBE-SERVICES`},
	{"nat", "PREROUTING", `-m comment --comment "kubernetes service portals" -j KUBE-SERVICES`},
	{"nat", "POSTROUTING", `-m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING`},
	{"filter", "FORWARD", `-m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD`},
	{"filter", "INPUT", `-m comment --comment "kubernetes health check rules" -j KUBE-NODE-PORT`},
	{"filter", "INPUT", `-m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL`},
	{"filter", "FORWARD", `-m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL`},
	{"filter", "INPUT", `-m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER`},
	{"filter", "OUTPUT", `-m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-OUT-FILTER`},
}

// line returns the rule as iptables-save prints it.
func (j jumpRule) line() string { return "-A " + j.chain + " " + j.spec }

// iptTable is the rendered content of one table: its rules per owned chain.
type iptTable struct {
	name   string
	chains []string
	rules  map[string][]string // chain -> rule specs (without "-A chain")
}

func (t *iptTable) add(chain string, format string, args ...any) {
	t.rules[chain] = append(t.rules[chain], fmt.Sprintf(format, args...))
}

// write renders the table as iptables-save prints it: owned chains sorted,
// then their rules chain by chain.
func (t *iptTable) write(b *strings.Builder) {
	fmt.Fprintf(b, "*%s\n", t.name)
	chains := slices.Sorted(slices.Values(t.chains))
	for _, c := range chains {
		fmt.Fprintf(b, ":%s - [0:0]\n", c)
	}
	for _, c := range chains {
		for _, r := range t.rules[c] {
			fmt.Fprintf(b, "-A %s %s\n", c, r)
		}
	}
	b.WriteString("COMMIT\n")
}

// renderIPTables returns the filter and nat tables of a validated ruleset.
func renderIPTables(r *Ruleset) (filter, nat *iptTable) {
	f := r.family()
	o := &r.Options
	name := func(s SetName) string { return s.IPSetName(f) }
	nonEmpty := func(s SetName) bool { return r.Len(s) > 0 }
	match := func(s SetName, flags string) string {
		return fmt.Sprintf(`-m comment --comment %s -m set --match-set %s %s`, saveQuote(s.comment()), name(s), flags)
	}
	mark := fmt.Sprintf("%#x", o.mark())

	nat = &iptTable{name: "nat", chains: natChains, rules: map[string][]string{}}
	filter = &iptTable{name: "filter", chains: filterChains, rules: map[string][]string{}}

	// nat KUBE-SERVICES.
	nat.add("KUBE-SERVICES", "-s %s -j RETURN", f.loopback())
	if nonEmpty(LoadBalancer) {
		nat.add("KUBE-SERVICES", "%s -j KUBE-LOAD-BALANCER", match(LoadBalancer, "dst,dst"))
	}
	if nonEmpty(ClusterIP) {
		switch d := o.LocalDetector; {
		case o.MasqueradeAll:
			nat.add("KUBE-SERVICES", "%s -j KUBE-MARK-MASQ", match(ClusterIP, "dst,dst"))
		case d.Mode == LocalCIDR:
			nat.add("KUBE-SERVICES", "! -s %s %s -j KUBE-MARK-MASQ", d.CIDR, match(ClusterIP, "dst,dst"))
		case d.Mode == LocalInterface:
			nat.add("KUBE-SERVICES", "! -i %s %s -j KUBE-MARK-MASQ", d.Interface, match(ClusterIP, "dst,dst"))
		case d.Mode == LocalInterfacePrefix:
			nat.add("KUBE-SERVICES", "! -i %s+ %s -j KUBE-MARK-MASQ", d.Interface, match(ClusterIP, "dst,dst"))
		default:
			nat.add("KUBE-SERVICES", "%s -j KUBE-MARK-MASQ", match(ClusterIP, "src,dst"))
		}
	}
	if nonEmpty(ExternalIP) {
		m := match(ExternalIP, "dst,dst")
		nat.add("KUBE-SERVICES", "%s -j KUBE-MARK-MASQ", m)
		nat.add("KUBE-SERVICES", "%s -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j ACCEPT", m)
		nat.add("KUBE-SERVICES", "%s -m addrtype --dst-type LOCAL -j ACCEPT", m)
	}
	if nonEmpty(ExternalIPLocal) {
		m := match(ExternalIPLocal, "dst,dst")
		nat.add("KUBE-SERVICES", "%s -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j ACCEPT", m)
		nat.add("KUBE-SERVICES", "%s -m addrtype --dst-type LOCAL -j ACCEPT", m)
	}
	nat.add("KUBE-SERVICES", "-m addrtype --dst-type LOCAL -j KUBE-NODE-PORT")
	if nonEmpty(ClusterIP) {
		nat.add("KUBE-SERVICES", "-m set --match-set %s dst,dst -j ACCEPT", name(ClusterIP))
	}
	if nonEmpty(LoadBalancer) {
		nat.add("KUBE-SERVICES", "-m set --match-set %s dst,dst -j ACCEPT", name(LoadBalancer))
	}

	// nat KUBE-LOAD-BALANCER, KUBE-NODE-PORT, KUBE-POSTROUTING, KUBE-MARK-MASQ.
	if nonEmpty(LoadBalancerLocal) {
		nat.add("KUBE-LOAD-BALANCER", "%s -j RETURN", match(LoadBalancerLocal, "dst,dst"))
	}
	nat.add("KUBE-LOAD-BALANCER", "-j KUBE-MARK-MASQ")
	for _, np := range []struct {
		proto       Protocol
		local, masq SetName
		flags       string
	}{
		{TCP, NodePortLocalTCP, NodePortTCP, "dst"},
		{UDP, NodePortLocalUDP, NodePortUDP, "dst"},
		{SCTP, NodePortLocalSCTP, NodePortSCTP, "dst,dst"},
	} {
		if nonEmpty(np.local) {
			nat.add("KUBE-NODE-PORT", "-p %s %s -j RETURN", np.proto, match(np.local, np.flags))
		}
		if nonEmpty(np.masq) {
			nat.add("KUBE-NODE-PORT", "-p %s %s -j KUBE-MARK-MASQ", np.proto, match(np.masq, np.flags))
		}
	}
	if nonEmpty(LoopBack) {
		nat.add("KUBE-POSTROUTING", "%s -j MASQUERADE", match(LoopBack, "dst,dst,src"))
	}
	nat.add("KUBE-POSTROUTING", "-m mark ! --mark %s/%s -j RETURN", mark, mark)
	nat.add("KUBE-POSTROUTING", "-j MARK --set-xmark %s/0x0", mark)
	nat.add("KUBE-POSTROUTING", `-m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully`)
	nat.add("KUBE-MARK-MASQ", "-j MARK --set-xmark %s/%s", mark, mark)

	// filter.
	filter.add("KUBE-FORWARD", `-m comment --comment "kubernetes forwarding rules" -m mark --mark %s/%s -j ACCEPT`, mark, mark)
	filter.add("KUBE-FORWARD", `-m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`)
	filter.add("KUBE-NODE-PORT", "%s -j ACCEPT", match(HealthCheckNodePort, "dst"))
	if nonEmpty(LoadBalancerFW) {
		filter.add("KUBE-PROXY-FIREWALL", "%s -j KUBE-SOURCE-RANGES-FIREWALL", match(LoadBalancerFW, "dst,dst"))
	}
	if nonEmpty(LoadBalancerSourceCIDR) {
		filter.add("KUBE-SOURCE-RANGES-FIREWALL", "%s -j RETURN", match(LoadBalancerSourceCIDR, "dst,dst,src"))
	}
	if nonEmpty(LoadBalancerSourceIP) {
		filter.add("KUBE-SOURCE-RANGES-FIREWALL", "%s -j RETURN", match(LoadBalancerSourceIP, "dst,dst,src"))
	}
	filter.add("KUBE-SOURCE-RANGES-FIREWALL", "-j DROP")
	if !o.NoVIPAccessFilter {
		for _, s := range []SetName{LoadBalancer, ClusterIP, ExternalIP, ExternalIPLocal} {
			filter.add("KUBE-IPVS-FILTER", "-m set --match-set %s dst,dst -j RETURN", name(s))
		}
		filter.add("KUBE-IPVS-FILTER", "-m set --match-set %s dst -j RETURN", name(HealthCheckNodePort))
		reject := "icmp-port-unreachable"
		if f == IPv6 {
			reject = "icmp6-port-unreachable"
		}
		filter.add("KUBE-IPVS-FILTER", "-m conntrack --ctstate NEW -m set --match-set %s dst -j REJECT --reject-with %s", name(IPVSIPs), reject)
	}
	if !o.NoNodeSourceRangeFilter {
		for _, m := range r.Members(LBNoNodeAccess) {
			// iptables-save prints the ipvs match as --vproto, --vaddr
			// (without the mask of a host address), --vport.
			host := fmt.Sprintf("%s/%d", m.Addr, f.bits())
			filter.add("KUBE-IPVS-OUT-FILTER", "-s %s -m ipvs --vproto %d --vaddr %s --vport %d -j DROP", host, m.Proto, m.Addr, m.Port)
		}
	}
	return filter, nat
}

// RenderIPTables returns the ruleset as the iptables back end writes it: the
// filter and nat tables' owned chains and their rules, in iptables-save's
// format and order (also valid iptables-restore --noflush input). The jump
// rules from the built-in chains are not included: see RenderIPTablesJumps.
// It validates r first.
func RenderIPTables(r *Ruleset) (string, error) {
	if err := r.Validate(); err != nil {
		return "", err
	}
	return renderIPTablesText(r), nil
}

// renderIPTablesText renders a validated ruleset.
func renderIPTablesText(r *Ruleset) string {
	filter, nat := renderIPTables(r)
	var b strings.Builder
	filter.write(&b)
	nat.write(&b)
	return b.String()
}

// RenderIPTablesJumps returns the rules that lead from the built-in chains
// into the owned ones, one per line, prefixed with their table
// ("nat -A OUTPUT ..."), in the order the back end inserts them.
func RenderIPTablesJumps() string {
	var b strings.Builder
	for _, j := range jumpRules {
		fmt.Fprintf(&b, "%s %s\n", j.table, j.line())
	}
	return b.String()
}

// saveQuote quotes a comment as iptables-save prints it: in double quotes,
// with quotes of either kind escaped by a backslash.
func saveQuote(s string) string {
	return `"` + strings.NewReplacer(`"`, `\"`, `'`, `\'`).Replace(s) + `"`
}
