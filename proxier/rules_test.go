package proxier

import (
	"net/netip"
	"testing"

	"github.com/ipvskit/ipvskit/iptables"
)

func TestRulesetsFollowKubeProxysSets(t *testing.T) {
	s := validState()
	web := s.Services["web"]
	web.LoadBalancerSourceRanges = []netip.Prefix{pfx("198.18.50.0/24")} // does not admit the node
	s.Services["web"] = web
	s.Services["lb2"] = Service{
		LoadBalancerIPs:          []netip.Addr{a("198.18.202.1")},
		LoadBalancerSourceRanges: []netip.Prefix{pfx("198.18.0.0/24")}, // admits the node 198.18.0.10
		Ports:                    []Port{{Protocol: SCTP, Port: 9, NodePort: 30009}},
	}
	d := compute(&s, dualStack)
	v4, v6 := d.rules[IPv4], d.rules[IPv6]
	ap := func(addr string, p iptables.Protocol, port uint16) iptables.Member {
		return iptables.AddrPort(a(addr), p, port)
	}
	for _, c := range []struct {
		r    *iptables.Ruleset
		set  iptables.SetName
		m    iptables.Member
		want bool
	}{
		{v4, iptables.ClusterIPSet, ap("198.18.100.1", iptables.TCP, 80), true},
		{v4, iptables.ClusterIPSet, ap("198.18.100.1", iptables.UDP, 53), true},
		{v6, iptables.ClusterIPSet, ap("2001:db8:100::1", iptables.TCP, 80), true},
		{v4, iptables.ClusterIPSet, ap("2001:db8:100::1", iptables.TCP, 80), false}, // families apart
		{v4, iptables.ExternalIPLocal, ap("198.18.200.1", iptables.TCP, 80), true},
		{v4, iptables.ExternalIPSet, ap("198.18.200.1", iptables.TCP, 80), false},
		{v4, iptables.LoadBalancer, ap("198.18.201.1", iptables.TCP, 80), true},
		{v4, iptables.LoadBalancerLocal, ap("198.18.201.1", iptables.TCP, 80), true},
		{v4, iptables.LoadBalancerFW, ap("198.18.201.1", iptables.TCP, 80), true},
		{v4, iptables.LoadBalancerSourceCIDR, iptables.AddrPortNet(a("198.18.201.1"), iptables.TCP, 80, pfx("198.18.50.0/24")), true},
		{v4, iptables.LBNoNodeAccess, ap("198.18.201.1", iptables.TCP, 80), true},
		{v4, iptables.LoadBalancerSourceIP, iptables.AddrPortAddr(a("198.18.202.1"), iptables.SCTP, 9, a("198.18.202.1")), true},
		{v4, iptables.LBNoNodeAccess, ap("198.18.202.1", iptables.SCTP, 9), false},
		{v4, iptables.NodePortTCP, iptables.Port(30080), true},
		{v4, iptables.NodePortLocalTCP, iptables.Port(30080), true},
		{v6, iptables.NodePortTCP, iptables.Port(30080), true},
		{v4, iptables.NodePortSCTP, ap("198.18.0.10", iptables.SCTP, 30009), true},
		{v6, iptables.NodePortSCTP, ap("2001:db8::10", iptables.SCTP, 30009), true},
		{v4, iptables.HealthCheckNodePort, iptables.Port(30500), true},
		{v4, iptables.LoopBack, iptables.AddrPortAddr(a("198.18.1.1"), iptables.TCP, 8081, a("198.18.1.1")), true},
		{v4, iptables.IPVSIPs, iptables.Addr(a("198.18.100.1")), true},
		{v4, iptables.IPVSIPs, iptables.Addr(a("198.18.0.10")), false}, // node addresses are never bound
	} {
		if got := c.r.Has(c.set, c.m); got != c.want {
			t.Errorf("%v %v has %v = %v, want %v", c.r.Family, c.set, c.m, got, c.want)
		}
	}
	for _, r := range []*iptables.Ruleset{v4, v6} {
		if err := r.Validate(); err != nil {
			t.Errorf("%v ruleset invalid: %v", r.Family, err)
		}
	}
}

func TestRulesAddBeforeAndRemoveAfter(t *testing.T) {
	_, applied := planFor(t, nil, oneService())
	// Adding a service: its entries go in first, nothing to do last.
	s := oneService()
	s.Services["two"] = Service{ClusterIPs: []netip.Addr{a("198.18.100.2")}, Ports: []Port{{Protocol: UDP, Port: 53}}}
	p, withTwo := planFor(t, applied, s)
	m := iptables.AddrPort(a("198.18.100.2"), iptables.UDP, 53)
	if r := p.Rules[IPv4]; r == nil || !r.Has(iptables.ClusterIPSet, m) || len(p.RulesAfter) != 0 {
		t.Fatalf("adding: first %v, last %v", p.Rules, p.RulesAfter)
	}
	// Removing it: nothing new first, its entries go last.
	p, _ = planFor(t, withTwo, oneService())
	if len(p.Rules) != 0 {
		t.Errorf("removing: rules applied first: %v", p.Rules)
	}
	if r := p.RulesAfter[IPv4]; r == nil || r.Has(iptables.ClusterIPSet, m) || !r.Has(iptables.ClusterIPSet, iptables.AddrPort(a("198.18.100.1"), iptables.TCP, 80)) {
		t.Errorf("removing: last %v", p.RulesAfter)
	}
}
