// Package rulesbench times ipvskit's two netfilter back ends (package
// iptables) against the reference tools doing the same work: `ipset restore`
// + `iptables-restore` for the iptables back end, `nft -f` for the nftables
// back end, each run in a fresh network namespace.
package rulesbench

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/ipvskit/ipvskit/iptables"
)

func addr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{198, 18 + byte(i>>16&1), byte(i >> 8), byte(i)})
}

// Model returns the ruleset of a node in a cluster of n services, with set
// sizes such a cluster has: every service a cluster IP (a fifth of them a
// second, UDP port), a tenth of them load balancers (a third of those with
// the Local policy, a fifth with source ranges), a fifth node ports, 2% with
// external IPs, 20% of services with an endpoint on this node. The node
// source-range filter set stays empty: its rules need xt_ipvs, which the
// build machine's kernel lacks.
func Model(n int) *iptables.Ruleset {
	r := iptables.NewRuleset(iptables.IPv4, iptables.Options{LocalMatch: iptables.LocalMatch{Mode: iptables.LocalCIDR, CIDR: netip.MustParsePrefix("198.19.128.0/17")}})
	for i := 0; i < n; i++ {
		vip := addr(i)
		r.Add(iptables.ClusterIPSet, iptables.AddrPort(vip, iptables.TCP, 80))
		r.Add(iptables.IPVSIPs, iptables.Addr(vip))
		if i%5 == 0 {
			r.Add(iptables.ClusterIPSet, iptables.AddrPort(vip, iptables.UDP, 53))
		}
		if i%5 == 1 {
			ep := netip.AddrFrom4([4]byte{198, 19, 128 + byte(i>>8&0x7f), byte(i)})
			r.Add(iptables.LoopBack, iptables.AddrPortAddr(ep, iptables.TCP, 8080, ep))
		}
		if i%5 == 2 {
			r.Add(iptables.NodePortTCP, iptables.Port(uint16(30000+i%2700)))
		}
		if i%10 == 3 {
			lb := addr(20000 + i)
			r.Add(iptables.LoadBalancer, iptables.AddrPort(lb, iptables.TCP, 443))
			r.Add(iptables.IPVSIPs, iptables.Addr(lb))
			if i%30 == 3 {
				r.Add(iptables.LoadBalancerLocal, iptables.AddrPort(lb, iptables.TCP, 443))
				r.Add(iptables.HealthCheckNodePort, iptables.Port(uint16(32768+i%2700)))
			}
			if i%50 == 3 {
				r.Add(iptables.LoadBalancerFW, iptables.AddrPort(lb, iptables.TCP, 443))
				r.Add(iptables.LoadBalancerSourceCIDR,
					iptables.AddrPortNet(lb, iptables.TCP, 443, netip.MustParsePrefix("198.19.0.0/24")),
					iptables.AddrPortNet(lb, iptables.TCP, 443, netip.MustParsePrefix("198.19.1.0/24")))
			}
		}
		if i%50 == 4 {
			ext := addr(40000 + i)
			r.Add(iptables.ExternalIPSet, iptables.AddrPort(ext, iptables.TCP, 80))
			r.Add(iptables.IPVSIPs, iptables.Addr(ext))
		}
	}
	return r
}

// Delta is one new service: what changes in the model, and the same change
// written for the reference tools.
type Delta struct {
	Mutate func(r *iptables.Ruleset) // adds the service to r, as a proxier would
	IPSet  string                    // `ipset restore` input
	NFT    string                    // `nft -f` input
}

// OneService returns base plus one new service (cluster IP, VIP, a local
// endpoint and a node port).
func OneService(base *iptables.Ruleset, n int) Delta {
	vip := addr(n + 30000)
	ep := netip.AddrFrom4([4]byte{198, 19, 255, 250})
	mutate := func(r *iptables.Ruleset) {
		r.Add(iptables.ClusterIPSet, iptables.AddrPort(vip, iptables.TCP, 80))
		r.Add(iptables.IPVSIPs, iptables.Addr(vip))
		r.Add(iptables.LoopBack, iptables.AddrPortAddr(ep, iptables.TCP, 8080, ep))
		r.Add(iptables.NodePortTCP, iptables.Port(32700))
	}
	var ips, nft strings.Builder
	fmt.Fprintf(&ips, "add %s %s,tcp:80 -exist\n", iptables.ClusterIPSet.IPSetName(iptables.IPv4), vip)
	fmt.Fprintf(&ips, "add %s %s -exist\n", iptables.IPVSIPs.IPSetName(iptables.IPv4), vip)
	fmt.Fprintf(&ips, "add %s %s,tcp:8080,%s -exist\n", iptables.LoopBack.IPSetName(iptables.IPv4), ep, ep)
	fmt.Fprintf(&ips, "add %s 32700 -exist\n", iptables.NodePortTCP.IPSetName(iptables.IPv4))
	t := iptables.DefaultTable
	fmt.Fprintf(&nft, "add element ip %s cluster-ip { %s . tcp . 80 }\n", t, vip)
	fmt.Fprintf(&nft, "add element ip %s ipvs-ips { %s }\n", t, vip)
	fmt.Fprintf(&nft, "add element ip %s loop-back { %s . tcp . 8080 . %s }\n", t, ep, ep)
	fmt.Fprintf(&nft, "add element ip %s node-port-tcp { 32700 }\n", t)
	return Delta{Mutate: mutate, IPSet: ips.String(), NFT: nft.String()}
}

// IPSetRestore returns `ipset restore` input that creates every ipset of r
// and fills it, as the iptables back end's sets are created.
func IPSetRestore(r *iptables.Ruleset) string {
	var b strings.Builder
	for _, s := range iptables.Sets() {
		name := s.IPSetName(r.Family)
		if name == "" {
			continue
		}
		switch s.Shape() {
		case iptables.ShapePort:
			fmt.Fprintf(&b, "create %s bitmap:port range 0-65535\n", name)
		default:
			fmt.Fprintf(&b, "create %s hash:%s family inet hashsize 1024 maxelem 65536\n", name, s.Shape())
		}
		for _, m := range r.Members(s) {
			fmt.Fprintf(&b, "add %s %s\n", name, m)
		}
	}
	return b.String()
}
