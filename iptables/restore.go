package iptables

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ipvskit/ipvskit/internal/names"
)

// jumpRule is a rule in a built-in chain that leads into an owned chain.
type jumpRule struct {
	table, chain, spec string
}

// jumpRules are the rules that lead from the built-in chains into the owned
// ones, in the order kube-proxy inserts them (each at position 1). Each
// carries the instance's mark as its comment, never kube-proxy's text, so
// that kube-proxy's own jump rules are never taken for ours.
func (n *iptNames) jumpRules() []jumpRule {
	c := "-m comment --comment " + saveQuote(n.mark) + " -j "
	return []jumpRule{
		{"nat", "OUTPUT", c + n.services},
		{"nat", "PREROUTING", c + n.services},
		{"nat", "POSTROUTING", c + n.postrouting},
		{"filter", "FORWARD", c + n.forward},
		{"filter", "INPUT", c + n.nodePort},
		{"filter", "INPUT", c + n.proxyFirewall},
		{"filter", "FORWARD", c + n.proxyFirewall},
		{"filter", "INPUT", c + n.ipvsFilter},
		{"filter", "OUTPUT", c + n.ipvsOutFilter},
	}
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

// renderIPTables returns the filter and nat tables of a validated ruleset,
// with n's names: every owned chain starts with the marker rule, and the
// filter table holds the owner chain, which references every owned ipset.
func renderIPTables(r *Ruleset, n *iptNames) (filter, nat *iptTable) {
	f := r.family()
	o := &r.Options
	name := func(s SetName) string { return n.ipset(s, f) }
	nonEmpty := func(s SetName) bool { return r.Len(s) > 0 }
	match := func(s SetName, flags string) string {
		return fmt.Sprintf(`-m comment --comment %s -m set --match-set %s %s`, saveQuote(s.comment()), name(s), flags)
	}
	mark := fmt.Sprintf("%#x", o.mark())

	nat = &iptTable{name: "nat", chains: n.natChains(), rules: map[string][]string{}}
	filter = &iptTable{name: "filter", chains: n.filterChains(), rules: map[string][]string{}}
	for _, t := range []*iptTable{nat, filter} {
		for _, c := range t.chains {
			t.add(c, "%s", n.marker())
		}
	}
	svc, masq := n.services, n.markMasq

	// nat SERVICES.
	nat.add(svc, "-s %s -j RETURN", loopback(f))
	if nonEmpty(LoadBalancer) {
		nat.add(svc, "%s -j %s", match(LoadBalancer, "dst,dst"), n.loadBalancer)
	}
	if nonEmpty(ClusterIPSet) {
		switch d := o.LocalMatch; {
		case o.MasqueradeAll:
			nat.add(svc, "%s -j %s", match(ClusterIPSet, "dst,dst"), masq)
		case d.Mode == LocalCIDR:
			nat.add(svc, "! -s %s %s -j %s", d.CIDR, match(ClusterIPSet, "dst,dst"), masq)
		case d.Mode == LocalInterface:
			nat.add(svc, "! -i %s %s -j %s", d.Interface, match(ClusterIPSet, "dst,dst"), masq)
		case d.Mode == LocalInterfacePrefix:
			nat.add(svc, "! -i %s+ %s -j %s", d.Interface, match(ClusterIPSet, "dst,dst"), masq)
		default:
			nat.add(svc, "%s -j %s", match(ClusterIPSet, "src,dst"), masq)
		}
	}
	if nonEmpty(ExternalIPSet) {
		m := match(ExternalIPSet, "dst,dst")
		nat.add(svc, "%s -j %s", m, masq)
		nat.add(svc, "%s -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j ACCEPT", m)
		nat.add(svc, "%s -m addrtype --dst-type LOCAL -j ACCEPT", m)
	}
	if nonEmpty(ExternalIPLocal) {
		m := match(ExternalIPLocal, "dst,dst")
		nat.add(svc, "%s -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j ACCEPT", m)
		nat.add(svc, "%s -m addrtype --dst-type LOCAL -j ACCEPT", m)
	}
	nat.add(svc, "-m addrtype --dst-type LOCAL -j %s", n.natNodePort)
	if nonEmpty(ClusterIPSet) {
		nat.add(svc, "-m set --match-set %s dst,dst -j ACCEPT", name(ClusterIPSet))
	}
	if nonEmpty(LoadBalancer) {
		nat.add(svc, "-m set --match-set %s dst,dst -j ACCEPT", name(LoadBalancer))
	}

	// nat LOAD-BALANCER, NODE-PORT, POSTROUTING, MARK-MASQ.
	if nonEmpty(LoadBalancerLocal) {
		nat.add(n.loadBalancer, "%s -j RETURN", match(LoadBalancerLocal, "dst,dst"))
	}
	nat.add(n.loadBalancer, "-j %s", masq)
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
			nat.add(n.natNodePort, "-p %s %s -j RETURN", np.proto, match(np.local, np.flags))
		}
		if nonEmpty(np.masq) {
			nat.add(n.natNodePort, "-p %s %s -j %s", np.proto, match(np.masq, np.flags), masq)
		}
	}
	if nonEmpty(LoopBack) {
		nat.add(n.postrouting, "%s -j MASQUERADE", match(LoopBack, "dst,dst,src"))
	}
	nat.add(n.postrouting, "-m mark ! --mark %s/%s -j RETURN", mark, mark)
	nat.add(n.postrouting, "-j MARK --set-xmark %s/0x0", mark)
	nat.add(n.postrouting, `-m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully`)
	nat.add(masq, "-j MARK --set-xmark %s/%s", mark, mark)

	// filter.
	filter.add(n.forward, `-m comment --comment "kubernetes forwarding rules" -m mark --mark %s/%s -j ACCEPT`, mark, mark)
	filter.add(n.forward, `-m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`)
	filter.add(n.nodePort, "%s -j ACCEPT", match(HealthCheckNodePort, "dst"))
	if nonEmpty(LoadBalancerFW) {
		filter.add(n.proxyFirewall, "%s -j %s", match(LoadBalancerFW, "dst,dst"), n.sourceRanges)
	}
	if nonEmpty(LoadBalancerSourceCIDR) {
		filter.add(n.sourceRanges, "%s -j RETURN", match(LoadBalancerSourceCIDR, "dst,dst,src"))
	}
	if nonEmpty(LoadBalancerSourceIP) {
		filter.add(n.sourceRanges, "%s -j RETURN", match(LoadBalancerSourceIP, "dst,dst,src"))
	}
	filter.add(n.sourceRanges, "-j DROP")
	if !o.NoVIPAccessFilter {
		for _, s := range []SetName{LoadBalancer, ClusterIPSet, ExternalIPSet, ExternalIPLocal} {
			filter.add(n.ipvsFilter, "-m set --match-set %s dst,dst -j RETURN", name(s))
		}
		filter.add(n.ipvsFilter, "-m set --match-set %s dst -j RETURN", name(HealthCheckNodePort))
		reject := "icmp-port-unreachable"
		if f == IPv6 {
			reject = "icmp6-port-unreachable"
		}
		filter.add(n.ipvsFilter, "-m conntrack --ctstate NEW -m set --match-set %s dst -j REJECT --reject-with %s", name(IPVSIPs), reject)
	}
	if !o.NoNodeSourceRangeFilter {
		for _, m := range r.Members(LBNoNodeAccess) {
			// iptables-save prints the ipvs match as --vproto, --vaddr
			// (without the mask of a host address), --vport.
			host := fmt.Sprintf("%s/%d", m.Addr, f.Bits())
			filter.add(n.ipvsOutFilter, "-s %s -m ipvs --vproto %d --vaddr %s --vport %d -j DROP", host, m.Proto, m.Addr, m.Port)
		}
	}

	// The owner chain: one reference per owned ipset, so that nobody can
	// destroy and re-create a set of ours while the chain exists.
	for _, s := range Sets() {
		if s.isIPSet() {
			filter.add(n.owner, "%s", n.ownerRef(name(s), s.Shape()))
		}
	}
	return filter, nat
}

// RenderIPTables returns the ruleset as the iptables back end configured by
// cfg (nil: the defaults) writes it: the filter and nat tables' owned chains
// and their rules, in iptables-save's format and order (also valid
// iptables-restore --noflush input), names derived from cfg's instance. The
// jump rules from the built-in chains are not included: see
// RenderIPTablesJumps. It validates cfg's instance and r first.
func RenderIPTables(r *Ruleset, cfg *IPTablesConfig) (string, error) {
	n, err := checkNames(cfg)
	if err != nil {
		return "", err
	}
	if err := r.Validate(); err != nil {
		return "", err
	}
	return renderIPTablesText(r, n), nil
}

// checkNames validates cfg's instance and returns its names.
func checkNames(cfg *IPTablesConfig) (*iptNames, error) {
	if cfg != nil && cfg.Instance != "" {
		if err := names.CheckInstance(cfg.Instance); err != nil {
			return nil, &ValidationError{Field: "IPTablesConfig.Instance", Value: cfg.Instance, Reason: err.Error()}
		}
	}
	return namesOf(cfg), nil
}

// renderIPTablesText renders a validated ruleset.
func renderIPTablesText(r *Ruleset, n *iptNames) string {
	filter, nat := renderIPTables(r, n)
	var b strings.Builder
	filter.write(&b)
	nat.write(&b)
	return b.String()
}

// RenderIPTablesJumps returns the rules that lead from the built-in chains
// into the owned ones of the back end configured by cfg (nil: the
// defaults), one per line, prefixed with their table ("nat -A OUTPUT ..."),
// in the order the back end inserts them.
func RenderIPTablesJumps(cfg *IPTablesConfig) string {
	var b strings.Builder
	for _, j := range namesOf(cfg).jumpRules() {
		fmt.Fprintf(&b, "%s %s\n", j.table, j.line())
	}
	return b.String()
}

// saveQuote quotes a comment as iptables-save prints it: in double quotes,
// with quotes of either kind escaped by a backslash.
func saveQuote(s string) string {
	return `"` + strings.NewReplacer(`"`, `\"`, `'`, `\'`).Replace(s) + `"`
}
