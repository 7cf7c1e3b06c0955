package iptables

import (
	"fmt"
	"net/netip"
)

// sample returns a ruleset with members in every set, built like a proxy
// would for a handful of services, addresses from the test ranges.
func sample(f Family, o Options) *Ruleset {
	r := NewRuleset(f, o)
	a := func(i int) netip.Addr {
		if f == IPv6 {
			return netip.MustParseAddr(fmt.Sprintf("2001:db8::%x", i))
		}
		return netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)})
	}
	net := func(s string) netip.Prefix {
		if f == IPv6 {
			return netip.MustParsePrefix("2001:db8:" + s + "::/48")
		}
		return netip.MustParsePrefix("198.19." + s + ".0/24")
	}
	r.Add(ClusterIPSet, AddrPort(a(1), TCP, 80), AddrPort(a(1), UDP, 53), AddrPort(a(2), SCTP, 9000))
	r.Add(LoopBack, AddrPortAddr(a(257), TCP, 8080, a(257)))
	r.Add(ExternalIPSet, AddrPort(a(3), TCP, 443))
	r.Add(ExternalIPLocal, AddrPort(a(4), TCP, 443))
	r.Add(LoadBalancer, AddrPort(a(5), TCP, 80), AddrPort(a(6), TCP, 80))
	r.Add(LoadBalancerLocal, AddrPort(a(6), TCP, 80))
	r.Add(LoadBalancerFW, AddrPort(a(5), TCP, 80))
	r.Add(LoadBalancerSourceCIDR, AddrPortNet(a(5), TCP, 80, net("1")), AddrPortNet(a(5), TCP, 80, net("2")))
	r.Add(LoadBalancerSourceIP, AddrPortAddr(a(5), TCP, 80, a(5)))
	r.Add(NodePortTCP, Port(30080), Port(30081))
	r.Add(NodePortLocalTCP, Port(30081))
	r.Add(NodePortUDP, Port(30053))
	r.Add(NodePortLocalUDP, Port(30054))
	r.Add(NodePortSCTP, AddrPort(a(512), SCTP, 30090))
	r.Add(NodePortLocalSCTP, AddrPort(a(512), SCTP, 30091))
	r.Add(HealthCheckNodePort, Port(32000))
	r.Add(IPVSIPs, Addr(a(1)), Addr(a(2)), Addr(a(3)), Addr(a(4)), Addr(a(5)), Addr(a(6)))
	r.Add(LBNoNodeAccess, AddrPort(a(5), TCP, 80))
	return r
}

// optionCases are the option combinations the golden and kernel tests cover.
func optionCases(f Family) map[string]Options {
	cidr := netip.MustParsePrefix("198.19.0.0/16")
	if f == IPv6 {
		cidr = netip.MustParsePrefix("2001:db8:100::/40")
	}
	return map[string]Options{
		"default":   {},
		"masqall":   {MasqueradeAll: true, MasqueradeMark: 0x10000},
		"cidr":      {LocalMatch: LocalMatch{Mode: LocalCIDR, CIDR: cidr}},
		"iface":     {LocalMatch: LocalMatch{Mode: LocalInterface, Interface: "cni0"}},
		"ifprefix":  {LocalMatch: LocalMatch{Mode: LocalInterfacePrefix, Interface: "veth"}},
		"nofilters": {NoVIPAccessFilter: true, NoNodeSourceRangeFilter: true},
	}
}
