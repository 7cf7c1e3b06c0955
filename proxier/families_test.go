package proxier

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
)

// Issue 21, item 1: a service's IPFamilies choose the families of its node
// ports and health-check port; empty, they are those of its cluster IPs, or
// every enabled family without cluster IPs.
func TestIPFamiliesChooseWhereNodePortsAreServed(t *testing.T) {
	np := func(port int) []Port { return []Port{{Name: "p", Protocol: TCP, Port: 80, NodePort: port}} }
	s := State{
		Node: dualStackNode,
		Services: map[string]Service{
			// kube-proxy's IPv6-only Service on a dual-stack node.
			"v6only":  {IPFamilies: []Family{IPv6}, Ports: np(30080), ExternalTrafficPolicy: Local, HealthCheckNodePort: 30500},
			"v6cip":   {ClusterIPs: []netip.Addr{a("2001:db8:100::1")}, IPFamilies: []Family{IPv6}, Ports: np(30081)},
			"both":    {ClusterIPs: []netip.Addr{a("198.18.100.2")}, IPFamilies: []Family{IPv6, IPv4}, Ports: np(30082)},
			"default": {Ports: np(30083)},
		},
	}
	if err := s.Validate(dualStack); err != nil {
		t.Fatal(err)
	}
	d := compute(&s, dualStack)
	for k, want := range map[ipvs.ServiceKey]bool{
		key(ipvs.TCP, "198.18.0.10", 30080): false, key(ipvs.TCP, "2001:db8::10", 30080): true,
		key(ipvs.TCP, "198.18.0.10", 30081): false, key(ipvs.TCP, "2001:db8::10", 30081): true,
		key(ipvs.TCP, "198.18.0.10", 30082): true, key(ipvs.TCP, "2001:db8::10", 30082): true,
		key(ipvs.TCP, "198.18.0.10", 30083): true, key(ipvs.TCP, "2001:db8::10", 30083): true,
	} {
		if _, got := d.servers[k]; got != want {
			t.Errorf("%v: virtual server made %v, want %v", k, got, want)
		}
	}
	v4, v6 := d.rules[IPv4], d.rules[IPv6]
	if got := v4.Members(iptables.NodePortTCP); !slices.Equal(got, []iptables.Member{iptables.Port(30082), iptables.Port(30083)}) {
		t.Errorf("IPv4 node-port set: %v, want 30082 and 30083", got)
	}
	if got := v6.Len(iptables.NodePortTCP); got != 4 {
		t.Errorf("IPv6 node-port set has %d members, want 4", got)
	}
	if v4.Len(iptables.HealthCheckNodePort) != 0 || v6.Len(iptables.HealthCheckNodePort) != 1 {
		t.Errorf("health-check port entries: IPv4 %d, IPv6 %d; want 0, 1",
			v4.Len(iptables.HealthCheckNodePort), v6.Len(iptables.HealthCheckNodePort))
	}
}

// A VIP of a family the service is not served in is refused, as are
// families that are unknown, not enabled or listed twice.
func TestIPFamiliesAreValidated(t *testing.T) {
	port := []Port{{Protocol: TCP, Port: 80}}
	s := State{Services: map[string]Service{
		"cip": {ClusterIPs: []netip.Addr{a("198.18.100.1"), a("2001:db8:100::1")}, IPFamilies: []Family{IPv6}, Ports: port},
		"eip": {IPFamilies: []Family{IPv6}, ExternalIPs: []netip.Addr{a("198.18.102.1")}, Ports: port},
		"lb":  {IPFamilies: []Family{IPv4}, LoadBalancerIPs: []netip.Addr{a("2001:db8:103::1")}, Ports: port},
		"bad": {IPFamilies: []Family{IPv4, 3, IPv4}, Ports: port},
	}}
	err := s.Validate(dualStack)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want a *ValidationError", err)
	}
	want := []string{
		`services["bad"].ipFamilies[1]: Family(3) is not IPv4 or IPv6`,
		`services["bad"].ipFamilies[2]: IPv4 is listed twice`,
		`services["cip"].clusterIPs[0]: 198.18.100.1 is IPv4, a family the service is not served in (ipFamilies [IPv6])`,
		`services["eip"].externalIPs[0]: 198.18.102.1 is IPv4, a family the service is not served in (ipFamilies [IPv6])`,
		`services["lb"].loadBalancerIPs[0]: 2001:db8:103::1 is IPv6, a family the service is not served in (ipFamilies [IPv4])`,
	}
	var got []string
	for _, p := range ve.Problems {
		got = append(got, p.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	v6 := State{Services: map[string]Service{"v6": {IPFamilies: []Family{IPv6}, Ports: port}}}
	if err := v6.Validate(&Config{}); err == nil || !strings.Contains(err.Error(), `services["v6"].ipFamilies[0]: IPv6 is a family the config does not enable`) {
		t.Errorf("IPv6 on an IPv4 proxier: %v", err)
	}
}

// Issue 21, item 2: a health-check node port is refused with the external
// traffic policy Cluster, which has nothing for it to report.
func TestHealthCheckNodePortNeedsTheLocalPolicy(t *testing.T) {
	svc := Service{ClusterIPs: []netip.Addr{a("198.18.100.1")}, HealthCheckNodePort: 30500,
		Ports: []Port{{Protocol: TCP, Port: 80, NodePort: 30080}}}
	s := State{Services: map[string]Service{"web": svc}}
	want := `services["web"].healthCheckNodePort: 30500 is set with the external traffic policy Cluster: a health check is only for Local`
	if err := s.Validate(dualStack); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
	svc.ExternalTrafficPolicy = Local
	s.Services["web"] = svc
	if err := s.Validate(dualStack); err != nil {
		t.Errorf("with Local: %v", err)
	}
}

// Issue 21, item 3: the health-check port is let in in every family the
// service is served in, whatever the node's addresses and whether or not
// the service has node ports (a load balancer without them).
func TestHealthCheckPortDoesNotNeedNodeAddresses(t *testing.T) {
	lb := Service{ClusterIPs: []netip.Addr{a("198.18.100.1"), a("2001:db8:100::1")},
		LoadBalancerIPs: []netip.Addr{a("198.18.103.1")}, ExternalTrafficPolicy: Local, HealthCheckNodePort: 30500,
		Ports: []Port{{Protocol: TCP, Port: 80}}}
	for _, node := range []Node{{}, {Addresses: []netip.Addr{a("198.18.0.10")}}, dualStackNode} {
		s := State{Node: node, Services: map[string]Service{"lb": lb}}
		if err := s.Validate(dualStack); err != nil {
			t.Fatal(err)
		}
		d := compute(&s, dualStack)
		for _, f := range []Family{IPv4, IPv6} {
			if got := d.rules[f].Members(iptables.HealthCheckNodePort); !slices.Equal(got, []iptables.Member{iptables.Port(30500)}) {
				t.Errorf("node %v: %v health-check set %v, want 30500", node.Addresses, f, got)
			}
		}
	}
}

// Issue 21, item 5: IPv4 link-local node addresses carry node ports, as in
// kube-proxy; IPv6 link-local ones (which need a zone) and loopback ones
// do not.
func TestLinkLocalNodeAddresses(t *testing.T) {
	n := &Node{Addresses: []netip.Addr{a("169.254.20.1"), a("fe80::1"), a("127.0.0.1"), a("::1"), a("198.18.0.10")}}
	got := nodePortAddrs(n, map[Family]bool{IPv4: true, IPv6: true})
	if w := []netip.Addr{a("169.254.20.1"), a("198.18.0.10")}; !slices.Equal(got, w) {
		t.Errorf("node-port addresses %v, want %v", got, w)
	}
	s := State{Node: *n, Services: map[string]Service{"np": {ClusterIPs: []netip.Addr{a("198.18.100.1")},
		Ports: []Port{{Protocol: TCP, Port: 80, NodePort: 30080}}}}}
	if err := s.Validate(dualStack); err != nil {
		t.Fatal(err)
	}
	if _, ok := compute(&s, dualStack).servers[key(ipvs.TCP, "169.254.20.1", 30080)]; !ok {
		t.Error("no node-port virtual server on the IPv4 link-local address")
	}
	for addr, want := range map[string]bool{"169.254.20.1": true, "fe80::1": false, "127.0.0.1": false, "::1": false,
		"198.18.0.10": true, "2001:db8::10": true, "::ffff:169.254.20.1": true} {
		if got := NodePortCapable(a(addr)); got != want {
			t.Errorf("NodePortCapable(%s) = %v, want %v", addr, got, want)
		}
	}
}
