package proxier

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
)

// forwardService is a service with a cluster, an external and a
// load-balancer IP (with a source range), one local and one remote
// endpoint, sent by method m.
func forwardService(m ForwardMethod, tun Tunnel) Service {
	return Service{
		ClusterIPs:               []netip.Addr{a("198.18.100.70")},
		ExternalIPs:              []netip.Addr{a("198.18.102.70")},
		LoadBalancerIPs:          []netip.Addr{a("198.18.103.70")},
		LoadBalancerSourceRanges: []netip.Prefix{netip.MustParsePrefix("198.18.20.0/24")},
		Ports:                    []Port{{Name: "http", Protocol: TCP, Port: 80}},
		Forward:                  m,
		Tunnel:                   tun,
		Endpoints: []Endpoint{
			{Addr: a("198.18.1.70"), Ready: true, Local: true},
			{Addr: a("198.18.1.71"), Ready: true},
		},
	}
}

// Each method: the destinations it makes, as the plan's ipvsadm text
// writes them, and the set members that decide masquerading: a Masq
// service's VIPs are in the sets whose rules mark for masquerade; a
// DirectRoute or Tunnel service's in the sets accepted without the mark
// (ExternalIPLocal, LoadBalancerLocal), still in the sets of the access
// filter (IPVSIPs) and of the source ranges, with no hairpin member.
func TestForwardMethodsDestinationsAndSets(t *testing.T) {
	cip := iptables.AddrPort(a("198.18.100.70"), TCP, 80)
	eip := iptables.AddrPort(a("198.18.102.70"), TCP, 80)
	lb := iptables.AddrPort(a("198.18.103.70"), TCP, 80)
	hairpin := iptables.AddrPortAddr(a("198.18.1.70"), TCP, 80, a("198.18.1.70"))
	type member struct {
		set iptables.SetName
		m   iptables.Member
	}
	masqueraded := []member{{iptables.ClusterIPSet, cip}, {iptables.ExternalIPSet, eip}, {iptables.LoopBack, hairpin}}
	unmarked := []member{{iptables.ExternalIPLocal, cip}, {iptables.ExternalIPLocal, eip}, {iptables.LoadBalancerLocal, lb}, {iptables.ExternalIPLocal, lb}}
	always := []member{
		{iptables.LoadBalancer, lb}, {iptables.LoadBalancerFW, lb},
		{iptables.LoadBalancerSourceCIDR, iptables.AddrPortNet(a("198.18.103.70"), TCP, 80, netip.MustParsePrefix("198.18.20.0/24"))},
		{iptables.IPVSIPs, iptables.Addr(a("198.18.100.70"))}, {iptables.IPVSIPs, iptables.Addr(a("198.18.102.70"))},
		{iptables.IPVSIPs, iptables.Addr(a("198.18.103.70"))},
	}
	for _, c := range []struct {
		name      string
		m         ForwardMethod
		tun       Tunnel
		dest      string // the destination's options in the plan
		has, lack []member
	}{
		{"masquerade", ipvs.Masq, Tunnel{}, "-m -w 1", masqueraded, unmarked},
		{"direct-route", ipvs.DirectRoute, Tunnel{}, "-g -w 1", unmarked, masqueraded},
		{"ipip", ipvs.Tunnel, Tunnel{}, "-i -w 1 --tun-type ipip", unmarked, masqueraded},
		{"gue", ipvs.Tunnel, Tunnel{Type: ipvs.GUE, Port: 6080, Flags: ipvs.TunnelRemCsum},
			"-i -w 1 --tun-type gue --tun-port 6080 --tun-remcsum", unmarked, masqueraded},
		{"gre", ipvs.Tunnel, Tunnel{Type: ipvs.GRE, Flags: ipvs.TunnelCsum}, "-i -w 1 --tun-type gre --tun-csum", unmarked, masqueraded},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newFakeNode(t)
			s := &State{Services: map[string]Service{"lb": forwardService(c.m, c.tun)}}
			res, err := n.p.Sync(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			plan := res.Plan.String()
			for _, vip := range []string{"198.18.100.70", "198.18.102.70", "198.18.103.70"} {
				for _, ep := range []string{"198.18.1.70", "198.18.1.71"} {
					if l := "-a -t " + vip + ":80 -r " + ep + ":80 " + c.dest + "\n"; !strings.Contains(plan, l) {
						t.Errorf("the plan has no %q:\n%s", l, plan)
					}
				}
			}
			r := n.rules[IPv4].Ruleset()
			for _, m := range slices.Concat(c.has, always) {
				if !r.Has(m.set, m.m) {
					t.Errorf("set %v lacks %v", m.set, m.m)
				}
			}
			for _, m := range c.lack {
				if r.Has(m.set, m.m) {
					t.Errorf("set %v has %v", m.set, m.m)
				}
			}
		})
	}
}

// A change of method is an update of each destination in place (no
// delete and re-add), and a second Sync sends nothing; Reconcile finds a
// destination whose method or tunnel was changed behind the Proxier's back
// and repairs it.
func TestForwardChangeAndRepair(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, &Config{})
	svc := forwardService(ipvs.Masq, Tunnel{})
	svc.ExternalIPs, svc.LoadBalancerIPs, svc.LoadBalancerSourceRanges = nil, nil, nil
	r.sync(t, State{Services: map[string]Service{"lb": svc}})

	svc.Forward, svc.Tunnel = ipvs.Tunnel, Tunnel{Type: ipvs.GUE, Port: 6080}
	res := r.sync(t, State{Services: map[string]Service{"lb": svc}})
	want := "# netfilter IPv4, first: set members added\n" +
		"add external-ip-local 198.18.100.70,tcp:80\n" +
		"# ipvs: add and update (ipvsadm -R)\n" +
		"-e -t 198.18.100.70:80 -r 198.18.1.70:80 -i -w 1 --tun-type gue --tun-port 6080 --tun-nocsum\n" +
		"-e -t 198.18.100.70:80 -r 198.18.1.71:80 -i -w 1 --tun-type gue --tun-port 6080 --tun-nocsum\n" +
		"# netfilter IPv4, last: set members deleted\n" +
		"delete cluster-ip 198.18.100.70,tcp:80\n" +
		"delete loop-back 198.18.1.70,tcp:80,198.18.1.70\n"
	if got := res.Plan.String(); got != want {
		t.Errorf("masquerade to gue: plan\n%s\nwant\n%s", got, want)
	}
	if res := r.sync(t, State{Services: map[string]Service{"lb": svc}}); !res.Plan.Empty() {
		t.Errorf("the same State again: plan\n%s", res.Plan)
	}

	k := ipvs.ServiceKey{Family: ipvs.IPv4, Protocol: ipvs.TCP, Addr: a("198.18.100.70"), Port: 80}
	must(t, r.ipvs.Fake.UpdateDestination(ctx, k, ipvs.Destination{Addr: a("198.18.1.70"), Family: ipvs.IPv4, Port: 80, Forward: ipvs.Masq, Weight: 1}))
	must(t, r.ipvs.Fake.UpdateDestination(ctx, k, ipvs.Destination{Addr: a("198.18.1.71"), Family: ipvs.IPv4, Port: 80, Forward: ipvs.Tunnel,
		TunnelType: ipvs.GUE, TunnelPort: 7000, Weight: 1}))
	before := r.ipvs.Fake.Dump()
	rep := r.reconcile(t)
	wantReport(t, rep,
		"ipvs: destination tcp 198.18.100.70:80 -> 198.18.1.70:80: forwarding masq, want tunnel; tunnel ipip, want gue; tunnel port 0, want 6080",
		"ipvs: destination tcp 198.18.100.70:80 -> 198.18.1.71:80: tunnel port 7000, want 6080")
	after := r.ipvs.Fake.Dump()
	if strings.Count(after, "--tun-port 6080") != 2 || after == before {
		t.Errorf("after the repair:\n%s", after)
	}
	if rep := r.reconcile(t); len(rep.Drift) != 0 {
		t.Errorf("a second Reconcile found %v", rep.Drift)
	}
}
