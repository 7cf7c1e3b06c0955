package iptables

import (
	"net/netip"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// kubeProxyIPv4 is a small kube-proxy iptables-mode node (facts of its
// layout: KUBE-SERVICES, a KUBE-SVC and its KUBE-SEP DNAT to a backend,
// KUBE-MARK-MASQ, KUBE-POSTROUTING, KUBE-FORWARD, KUBE-PROXY-FIREWALL,
// kubelet's KUBE-FIREWALL and canaries, their jump rules) plus a foreign
// chain that jumps to KUBE-MARK-MASQ, so that deleting that chain fails.
const kubeProxyIPv4 = `*nat
:KUBE-SERVICES - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-SVC-ULMVA6XW4KCU2AGC - [0:0]
:KUBE-SEP-5OJB2KTYXJRXS4ZK - [0:0]
:KUBE-KUBELET-CANARY - [0:0]
:KUBE-PROXY-CANARY - [0:0]
:OTHER-MASQ - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A PREROUTING -j OTHER-MASQ
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
-A KUBE-SERVICES -d 198.18.100.10/32 -p tcp -m comment --comment "ns1/svc1:p80 cluster IP" -j KUBE-SVC-ULMVA6XW4KCU2AGC
-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
-A KUBE-SVC-ULMVA6XW4KCU2AGC ! -s 198.18.0.0/16 -d 198.18.100.10/32 -p tcp -m comment --comment "ns1/svc1:p80 cluster IP" -j KUBE-MARK-MASQ
-A KUBE-SVC-ULMVA6XW4KCU2AGC -m comment --comment "ns1/svc1:p80 -> 198.18.200.2:8080" -j KUBE-SEP-5OJB2KTYXJRXS4ZK
-A KUBE-SEP-5OJB2KTYXJRXS4ZK -s 198.18.200.2/32 -m comment --comment "ns1/svc1:p80" -j KUBE-MARK-MASQ
-A KUBE-SEP-5OJB2KTYXJRXS4ZK -p tcp -m comment --comment "ns1/svc1:p80" -j DNAT --to-destination 198.18.200.2:8080
-A OTHER-MASQ -s 198.18.201.0/24 -j KUBE-MARK-MASQ
COMMIT
*filter
:KUBE-FORWARD - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
:KUBE-FIREWALL - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-EXTERNAL-SERVICES - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-KUBELET-CANARY - [0:0]
:KUBE-PROXY-CANARY - [0:0]
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES
-A INPUT -j KUBE-FIREWALL
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -j KUBE-FIREWALL
-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
COMMIT
`

// kubeProxyIPv6 is the IPv6 side of the same node, smaller.
const kubeProxyIPv6 = `*nat
:KUBE-SERVICES - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-MARK-MASQ - [0:0]
:OTHER-MASQ - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A PREROUTING -j OTHER-MASQ
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A OTHER-MASQ -s 2001:db8:201::/64 -j KUBE-MARK-MASQ
COMMIT
*filter
:KUBE-FORWARD - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
:KUBE-FIREWALL - [0:0]
-A INPUT -j KUBE-FIREWALL
-A INPUT -m conntrack --ctstate NEW -j KUBE-PROXY-FIREWALL
-A FORWARD -j KUBE-FORWARD
-A KUBE-FORWARD -m mark --mark 0x4000/0x4000 -j ACCEPT
COMMIT
`

// kubeProxyIPSets are ipsets of kube-proxy's names (as an IPVS-mode node
// that moved to iptables mode keeps them), both families.
var kubeProxyIPSets = [][]string{
	{"create", "KUBE-CLUSTER-IP", "hash:ip,port", "family", "inet"},
	{"add", "KUBE-CLUSTER-IP", "198.18.100.10,tcp:80"},
	{"create", "KUBE-LOOP-BACK", "hash:ip,port,ip", "family", "inet"},
	{"create", "KUBE-6-CLUSTER-IP", "hash:ip,port", "family", "inet6"},
	{"add", "KUBE-6-CLUSTER-IP", "2001:db8::100,tcp:80"},
}

// kubeProxyState is everything of kube-proxy's a test must find unchanged:
// both families' iptables-save of flavor fl, and ipset save.
func kubeProxyState(t *testing.T, ns *testutil.NetNS, fl string) string {
	t.Helper()
	return strip(ns.Exec(t, "iptables-"+fl+"-save")) + "\n" +
		strip(ns.Exec(t, "ip6tables-"+fl+"-save")) + "\n" + ns.Exec(t, "ipset", "save")
}

// kubeProxyNode writes the kube-proxy node in flavor fl of ns.
func kubeProxyNode(t *testing.T, ns *testutil.NetNS, fl string) {
	t.Helper()
	for bin, text := range map[string]string{"iptables-" + fl + "-restore": kubeProxyIPv4, "ip6tables-" + fl + "-restore": kubeProxyIPv6} {
		if _, err := ns.TryExec(t, []byte(text), bin, "--noflush"); err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
	}
	for _, args := range kubeProxyIPSets {
		ns.Exec(t, "ipset", args...)
	}
}

// The default instance's nftables back end, on a kube-proxy iptables-mode
// node of either flavor, removes nothing of kube-proxy's, and the node's
// service keeps answering through kube-proxy's DNAT before and after every
// step.
func TestIntegrationNFTablesOnKubeProxyIPTablesNode(t *testing.T) {
	for _, fl := range []string{"legacy", "nft"} {
		t.Run(fl, func(t *testing.T) {
			testutil.RequireTool(t, "iptables-"+fl+"-restore")
			testutil.RequireTool(t, "ipset")
			node, backend := testutil.NewNetNS(t), testutil.NewNetNS(t)
			testutil.Veth(t, node, "kp0", netip.MustParsePrefix("198.18.200.1/24"), backend, "eth0", netip.MustParsePrefix("198.18.200.2/24"))
			node.Exec(t, "ip", "route", "add", "198.18.100.0/24", "dev", "kp0")
			serveTCP(t, backend, "198.18.200.2:8080", "backend\n")
			kubeProxyNode(t, node, fl)
			before := kubeProxyState(t, node, fl)
			check := func(step string) {
				t.Helper()
				if got, err := fetch(t, node, "198.18.100.10:80"); err != nil || got != "backend\n" {
					t.Fatalf("after %s, the service through kube-proxy's DNAT: %q, %v", step, got, err)
				}
				if got := kubeProxyState(t, node, fl); got != before {
					t.Fatalf("after %s, kube-proxy's rules or ipsets changed (-before +after):\n%s", step, lineDiff(before, got))
				}
			}
			for _, f := range []Family{IPv4, IPv6} {
				b := newNFT(t, node, f, 0)
				runSteps(t, node, b, sample(f, Options{}), func(step string) { check(f.String() + " " + step) })
			}
		})
	}
}
