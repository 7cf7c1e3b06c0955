package iptables_test

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/ipvskit/ipvskit/iptables"
)

func ExampleRuleset() {
	r := iptables.NewRuleset(iptables.IPv4, iptables.Options{MasqueradeAll: true})
	vip := netip.MustParseAddr("198.18.0.10")
	r.Add(iptables.ClusterIPSet, iptables.AddrPort(vip, iptables.TCP, 80))
	r.Add(iptables.IPVSIPs, iptables.Addr(vip))
	fmt.Println(r.Validate(), r.Members(iptables.ClusterIPSet))

	r.Add(iptables.ClusterIPSet, iptables.AddrPort(vip, iptables.TCP, 0))
	fmt.Println(r.Validate())
	// Output:
	// <nil> [198.18.0.10,tcp:80]
	// iptables: invalid cluster-ip[198.18.0.10,tcp:0].Port "0": must be 1 to 65535
}

func ExampleRenderIPTables() {
	r := iptables.NewRuleset(iptables.IPv4, iptables.Options{MasqueradeAll: true})
	r.Add(iptables.ClusterIPSet, iptables.AddrPort(netip.MustParseAddr("198.18.0.10"), iptables.TCP, 80))
	text, _ := iptables.RenderIPTables(r, nil)
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "-A IPVSKIT-SERVICES") {
			fmt.Println(l)
		}
	}
	// Output:
	// -A IPVSKIT-SERVICES -m comment --comment "ipvskit:ipvskit"
	// -A IPVSKIT-SERVICES -s 127.0.0.0/8 -j RETURN
	// -A IPVSKIT-SERVICES -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set IPVSKIT-CLUSTER-IP dst,dst -j IPVSKIT-MARK-MASQ
	// -A IPVSKIT-SERVICES -m addrtype --dst-type LOCAL -j IPVSKIT-NODE-PORT
	// -A IPVSKIT-SERVICES -m set --match-set IPVSKIT-CLUSTER-IP dst,dst -j ACCEPT
}

func ExampleRenderNFT() {
	r := iptables.NewRuleset(iptables.IPv4, iptables.Options{})
	r.Add(iptables.NodePortTCP, iptables.Port(30080))
	script, _ := iptables.RenderNFT(r, "")
	for _, l := range strings.Split(script, "\n") {
		if strings.Contains(l, "node-port-tcp") || strings.Contains(l, "30080") {
			fmt.Println(strings.TrimSpace(l))
		}
	}
	// Output:
	// set node-port-tcp {
	// 30080 }
	// tcp dport @node-port-tcp jump mark-for-masquerade
}
