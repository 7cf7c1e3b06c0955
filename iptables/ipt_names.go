package iptables

import (
	"strings"

	"github.com/ipvskit/ipvskit/internal/names"
)

// iptNames are the names and the mark of one iptables back end's objects,
// all derived from its instance: with KubeProxyNames exactly kube-proxy's
// (KUBE-SERVICES, KUBE-CLUSTER-IP, KUBE-6-CLUSTER-IP, ...), otherwise the
// instance's prefix P (IPVSKIT-SERVICES, IPVSKIT-CLUSTER-IP,
// IPVSKIT-6-CLUSTER-IP, ...) with suffixes short enough that a 12-byte
// instance fits the kernel's limits (28 bytes a chain, 31 an ipset).
type iptNames struct {
	instance string
	kube     bool
	prefix   string
	// mark is the comment of the marker rule that starts every owned
	// chain, of every jump rule and of the owner chain's set references.
	mark string

	// nat chains.
	services, postrouting, natNodePort, loadBalancer, markMasq string
	// filter chains; owner holds a reference to every owned ipset and is
	// never jumped to.
	forward, nodePort, proxyFirewall, sourceRanges, ipvsFilter, ipvsOutFilter, owner string
}

// newIPTNames derives the names of instance (empty: the default).
func newIPTNames(instance string, kubeProxy bool) *iptNames {
	if instance == "" {
		instance = names.DefaultInstance
	}
	p := names.Prefix(instance, kubeProxy) + "-"
	n := &iptNames{instance: instance, kube: kubeProxy, prefix: p, mark: names.Mark(instance)}
	n.services, n.postrouting, n.natNodePort, n.loadBalancer, n.markMasq =
		p+"SERVICES", p+"POSTROUTING", p+"NODE-PORT", p+"LOAD-BALANCER", p+"MARK-MASQ"
	n.forward, n.nodePort, n.proxyFirewall, n.ipvsFilter, n.ipvsOutFilter =
		p+"FORWARD", p+"NODE-PORT", p+"PROXY-FIREWALL", p+"IPVS-FILTER", p+"IPVS-OUT-FILTER"
	n.sourceRanges, n.owner = p+"SOURCE-RANGES", p+"OWNER"
	if kubeProxy {
		n.sourceRanges, n.owner = "KUBE-SOURCE-RANGES-FIREWALL", "KUBE-IPVSKIT-OWNER"
	}
	return n
}

// namesOf returns the names cfg gives (nil: the defaults).
func namesOf(cfg *IPTablesConfig) *iptNames {
	if cfg == nil {
		return newIPTNames("", false)
	}
	return newIPTNames(cfg.Instance, cfg.KubeProxyNames)
}

// natChains and filterChains are the owned chains of each table, the owner
// chain last.
func (n *iptNames) natChains() []string {
	return []string{n.loadBalancer, n.markMasq, n.natNodePort, n.postrouting, n.services}
}

func (n *iptNames) filterChains() []string {
	return []string{n.forward, n.ipvsFilter, n.ipvsOutFilter, n.nodePort, n.proxyFirewall, n.sourceRanges, n.owner}
}

// chains returns the owned chains of table ("nat" or "filter").
func (n *iptNames) chains(table string) []string {
	if table == "nat" {
		return n.natChains()
	}
	return n.filterChains()
}

// ipset returns the name of the ipset that holds s for family f, or "" for
// a set that is not an ipset (LBNoNodeAccess).
func (n *iptNames) ipset(s SetName, f Family) string {
	if !s.isIPSet() {
		return ""
	}
	if n.kube {
		return s.IPSetName(f)
	}
	p := n.prefix
	if f == IPv6 {
		p += "6-"
	}
	return p + setDefs[s].suffix
}

// ipsets returns the owned ipsets' names for family f, by name.
func (n *iptNames) ipsets(f Family) map[string]SetName {
	out := map[string]SetName{}
	for _, s := range Sets() {
		if s.isIPSet() {
			out[n.ipset(s, f)] = s
		}
	}
	return out
}

// marker is the spec of the rule that starts every owned chain: a comment
// match carrying the mark, no target.
func (n *iptNames) marker() string { return "-m comment --comment " + saveQuote(n.mark) }

// markerLine is the marker as iptables-save prints it in chain c.
func (n *iptNames) markerLine(c string) string { return "-A " + c + " " + n.marker() }

// ownerRef is the owner chain's rule that references ipset name of shape
// sh: the set match with destination flags for each of its dimensions.
func (n *iptNames) ownerRef(name string, sh Shape) string {
	dims := map[Shape]int{ShapeAddr: 1, ShapePort: 1, ShapeAddrPort: 2, ShapeAddrPortAddr: 3, ShapeAddrPortNet: 3}[sh]
	flags := strings.TrimSuffix(strings.Repeat("dst,", dims), ",")
	return "-m set --match-set " + name + " " + flags + " " + n.marker()
}
