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
	x := &iptRender{r: r, n: n, f: r.family(), o: &r.Options}
	x.mark = fmt.Sprintf("%#x", x.o.mark())
	x.nat = &iptTable{name: "nat", chains: n.natChains(), rules: map[string][]string{}}
	x.filter = &iptTable{name: "filter", chains: n.filterChains(), rules: map[string][]string{}}
	for _, t := range []*iptTable{x.nat, x.filter} {
		for _, c := range t.chains {
			t.add(c, "%s", n.marker())
		}
	}
	x.natServices()
	x.natOthers()
	x.filterRules()
	x.ownerChain()
	return x.filter, x.nat
}

// iptRender is one rendering of a ruleset's tables, in parts.
type iptRender struct {
	r           *Ruleset
	n           *iptNames
	f           Family
	o           *Options
	mark        string // the masquerade mark, in hex
	nat, filter *iptTable
}

func (x *iptRender) name(s SetName) string   { return x.n.ipset(s, x.f) }
func (x *iptRender) nonEmpty(s SetName) bool { return x.r.Len(s) > 0 }

// match is the comment and set match of set s with flags.
func (x *iptRender) match(s SetName, flags string) string {
	return fmt.Sprintf(`-m comment --comment %s -m set --match-set %s %s`, saveQuote(s.comment()), x.name(s), flags)
}

// natServices writes the nat SERVICES chain.
func (x *iptRender) natServices() {
	nat, n, svc, masq := x.nat, x.n, x.n.services, x.n.markMasq
	nat.add(svc, "-s %s -j RETURN", loopback(x.f))
	if x.nonEmpty(LoadBalancer) {
		nat.add(svc, "%s -j %s", x.match(LoadBalancer, "dst,dst"), n.loadBalancer)
	}
	if x.nonEmpty(ClusterIPSet) {
		x.clusterIPMasq()
	}
	if x.nonEmpty(ExternalIPSet) {
		m := x.match(ExternalIPSet, "dst,dst")
		nat.add(svc, "%s -j %s", m, masq)
		nat.add(svc, "%s -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j ACCEPT", m)
		nat.add(svc, "%s -m addrtype --dst-type LOCAL -j ACCEPT", m)
	}
	if x.nonEmpty(ExternalIPLocal) {
		m := x.match(ExternalIPLocal, "dst,dst")
		nat.add(svc, "%s -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j ACCEPT", m)
		nat.add(svc, "%s -m addrtype --dst-type LOCAL -j ACCEPT", m)
	}
	nat.add(svc, "-m addrtype --dst-type LOCAL -j %s", n.natNodePort)
	if x.nonEmpty(ClusterIPSet) {
		nat.add(svc, "-m set --match-set %s dst,dst -j ACCEPT", x.name(ClusterIPSet))
	}
	if x.nonEmpty(LoadBalancer) {
		nat.add(svc, "-m set --match-set %s dst,dst -j ACCEPT", x.name(LoadBalancer))
	}
}

// clusterIPMasq writes the SERVICES rule that marks cluster IP traffic for
// masquerading: all of it, or what the local detector says is not local.
func (x *iptRender) clusterIPMasq() {
	nat, svc, masq := x.nat, x.n.services, x.n.markMasq
	switch d := x.o.LocalMatch; {
	case x.o.MasqueradeAll:
		nat.add(svc, "%s -j %s", x.match(ClusterIPSet, "dst,dst"), masq)
	case d.Mode == LocalCIDR:
		nat.add(svc, "! -s %s %s -j %s", d.CIDR, x.match(ClusterIPSet, "dst,dst"), masq)
	case d.Mode == LocalInterface:
		nat.add(svc, "! -i %s %s -j %s", d.Interface, x.match(ClusterIPSet, "dst,dst"), masq)
	case d.Mode == LocalInterfacePrefix:
		nat.add(svc, "! -i %s+ %s -j %s", d.Interface, x.match(ClusterIPSet, "dst,dst"), masq)
	default:
		nat.add(svc, "%s -j %s", x.match(ClusterIPSet, "src,dst"), masq)
	}
}

// natOthers writes the nat LOAD-BALANCER, NODE-PORT, POSTROUTING and
// MARK-MASQ chains.
func (x *iptRender) natOthers() {
	nat, n, masq, mark := x.nat, x.n, x.n.markMasq, x.mark
	if x.nonEmpty(LoadBalancerLocal) {
		nat.add(n.loadBalancer, "%s -j RETURN", x.match(LoadBalancerLocal, "dst,dst"))
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
		if x.nonEmpty(np.local) {
			nat.add(n.natNodePort, "-p %s %s -j RETURN", np.proto, x.match(np.local, np.flags))
		}
		if x.nonEmpty(np.masq) {
			nat.add(n.natNodePort, "-p %s %s -j %s", np.proto, x.match(np.masq, np.flags), masq)
		}
	}
	if x.nonEmpty(LoopBack) {
		nat.add(n.postrouting, "%s -j MASQUERADE", x.match(LoopBack, "dst,dst,src"))
	}
	nat.add(n.postrouting, "-m mark ! --mark %s/%s -j RETURN", mark, mark)
	nat.add(n.postrouting, "-j MARK --set-xmark %s/0x0", mark)
	nat.add(n.postrouting, `-m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully`)
	nat.add(masq, "-j MARK --set-xmark %s/%s", mark, mark)
}

// filterRules writes the filter table's chains but the owner chain.
func (x *iptRender) filterRules() {
	filter, n, mark := x.filter, x.n, x.mark
	filter.add(n.forward, `-m comment --comment "kubernetes forwarding rules" -m mark --mark %s/%s -j ACCEPT`, mark, mark)
	filter.add(n.forward, `-m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`)
	filter.add(n.nodePort, "%s -j ACCEPT", x.match(HealthCheckNodePort, "dst"))
	if x.nonEmpty(LoadBalancerFW) {
		filter.add(n.proxyFirewall, "%s -j %s", x.match(LoadBalancerFW, "dst,dst"), n.sourceRanges)
	}
	if x.nonEmpty(LoadBalancerSourceCIDR) {
		filter.add(n.sourceRanges, "%s -j RETURN", x.match(LoadBalancerSourceCIDR, "dst,dst,src"))
	}
	if x.nonEmpty(LoadBalancerSourceIP) {
		filter.add(n.sourceRanges, "%s -j RETURN", x.match(LoadBalancerSourceIP, "dst,dst,src"))
	}
	filter.add(n.sourceRanges, "-j DROP")
	if !x.o.NoVIPAccessFilter {
		x.vipAccessFilter()
	}
	if !x.o.NoNodeSourceRangeFilter {
		for _, m := range x.r.Members(LBNoNodeAccess) {
			// iptables-save prints the ipvs match as --vproto, --vaddr
			// (without the mask of a host address), --vport.
			host := fmt.Sprintf("%s/%d", m.Addr, x.f.Bits())
			filter.add(n.ipvsOutFilter, "-s %s -m ipvs --vproto %d --vaddr %s --vport %d -j DROP", host, m.Proto, m.Addr, m.Port)
		}
	}
}

// vipAccessFilter writes the chain that rejects new connections to a VIP
// on a port no service has.
func (x *iptRender) vipAccessFilter() {
	filter, n := x.filter, x.n
	for _, s := range []SetName{LoadBalancer, ClusterIPSet, ExternalIPSet, ExternalIPLocal} {
		filter.add(n.ipvsFilter, "-m set --match-set %s dst,dst -j RETURN", x.name(s))
	}
	filter.add(n.ipvsFilter, "-m set --match-set %s dst -j RETURN", x.name(HealthCheckNodePort))
	reject := "icmp-port-unreachable"
	if x.f == IPv6 {
		reject = "icmp6-port-unreachable"
	}
	filter.add(n.ipvsFilter, "-m conntrack --ctstate NEW -m set --match-set %s dst -j REJECT --reject-with %s", x.name(IPVSIPs), reject)
}

// ownerChain writes the owner chain: one reference per owned ipset, so
// that nobody can destroy and re-create a set of ours while the chain
// exists.
func (x *iptRender) ownerChain() {
	for _, s := range Sets() {
		if s.isIPSet() {
			x.filter.add(x.n.owner, "%s", x.n.ownerRef(x.name(s), s.Shape()))
		}
	}
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
