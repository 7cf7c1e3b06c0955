package proxier

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// webMarked is the http+https case: one client's connections to ports 80
// and 443 of the VIPs share the affinity, under firewall mark 7.
func webMarked() Service {
	return Service{
		ClusterIPs:      []netip.Addr{a("198.18.100.1"), a("2001:db8:100::1")},
		ExternalIPs:     []netip.Addr{a("198.18.102.1")},
		Ports:           []Port{{Name: "http", Protocol: TCP, Port: 80}, {Name: "https", Protocol: TCP, Port: 443}},
		FirewallMark:    7,
		SessionAffinity: &SessionAffinity{Timeout: time.Minute},
		Endpoints:       []Endpoint{{Addr: a("198.18.1.1"), Ready: true}, {Addr: a("198.18.1.2"), Ready: true}, {Addr: a("2001:db8:1::1"), Ready: true}},
	}
}

func TestFWMarkValidation(t *testing.T) {
	bad := webMarked()
	bad.FirewallMark = 0x4007
	bad.Ports[0].NodePort, bad.Ports[1].TargetPort = 30080, 8443
	bad.ExternalTrafficPolicy, bad.HealthCheckNodePort = Local, 32000
	bad.LoadBalancerSourceRanges = []netip.Prefix{netip.MustParsePrefix("198.18.20.0/24")}
	bad.Endpoints[0].Ports = map[string]int{"http": 8080}
	other := webMarked()
	other.ClusterIPs, other.ExternalIPs = []netip.Addr{a("198.18.100.9")}, nil
	other.FirewallMark = 0x4007
	novip := webMarked()
	novip.ClusterIPs, novip.ExternalIPs, novip.FirewallMark = nil, nil, 9
	st := State{Services: map[string]Service{"a": bad, "b": other, "c": novip}}
	err := st.Validate(&Config{Families: []Family{IPv4, IPv6}})
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err %v, want a *ValidationError", err)
	}
	var got []string
	for _, p := range ve.Problems {
		if strings.Contains(p.Path, "firewallMark") || strings.Contains(p.Msg, "firewall-mark") {
			got = append(got, p.String())
		}
	}
	want := []string{
		`services["a"].firewallMark: 0x4007 has the Proxier's masquerade bit 0x4000 (Config.MasqueradeBit): IPVS matches the packet's whole mark`,
		`services["a"].healthCheckNodePort: 32000 is set on a firewall-mark service, which serves no node ports`,
		`services["a"].externalTrafficPolicy: Local on a firewall-mark service: its one virtual server per family serves every VIP with every endpoint`,
		`services["a"].loadBalancerSourceRanges: 1 are set on a firewall-mark service: they are not enforced there`,
		`services["a"].ports[0].nodePort: 30080 is set on a firewall-mark service, which serves no node ports`,
		`services["a"].ports[1].targetPort: 8443 differs from the port 443: a firewall-mark service keeps each packet's port`,
		`services["a"].endpoints[0].ports: 1 are set on an endpoint of a firewall-mark service, which keeps each packet's port`,
		`services["b"].firewallMark: 0x4007 has the Proxier's masquerade bit 0x4000 (Config.MasqueradeBit): IPVS matches the packet's whole mark`,
		`services["b"].firewallMark: 0x4007 is already the IPv4 mark of services["a"]`,
		`services["c"].firewallMark: 0x9 is set on a service without a VIP (clusterIPs, externalIPs, loadBalancerIPs) for the marked traffic`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	bit := 2
	if err := (&State{Services: map[string]Service{"a": webMarked()}}).Validate(&Config{Families: []Family{IPv4, IPv6}, MasqueradeBit: &bit}); err == nil ||
		!strings.Contains(err.Error(), "masquerade bit 0x4") {
		t.Errorf("mark 7 with masquerade bit 3: %v", err)
	}
}

// A firewall-mark service makes one virtual server per family at port-0
// destinations, binds its VIPs, lets them in through the ExternalIPLocal
// set (no masquerade), and records its keys in the ledger, so a restarted
// Proxier knows them as its own: it sends no IPVS request and binds
// nothing (its rules it applies whole, as after every restart).
func TestFWMarkSyncAndRestart(t *testing.T) {
	ctx := context.Background()
	fake, link, rules := ipvstest.New(), dummytest.New(), map[Family]*iptablestest.Fake{IPv4: iptablestest.New(IPv4), IPv6: iptablestest.New(IPv6)}
	newP := func() *Proxier {
		p, err := New(&Config{Families: []Family{IPv4, IPv6}}, Deps{IPVS: fake, Link: link, Sysctls: sysctltest.New(""),
			Rules: map[Family]Rules{IPv4: rules[IPv4], IPv6: rules[IPv6]}})
		must(t, err)
		return p
	}
	st := State{Services: map[string]Service{"web": webMarked()}}
	res, err := newP().Sync(ctx, &st)
	must(t, err)
	text, err := res.Plan.render(DefaultLinkName)
	must(t, err)
	for _, line := range []string{
		"-A -f 7 -s rr -p 60\n", "-a -f 7 -r 198.18.1.1:0 -m -w 1\n", "-a -f 7 -r 198.18.1.2:0 -m -w 1\n",
		"-A -f 7 -6 -s rr -p 60\n", "-a -f 7 -6 -r [2001:db8:1::1]:0 -m -w 1\n",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("plan lacks %q:\n%s", line, text)
		}
	}
	for _, f := range []Family{IPv4, IPv6} {
		svcs, err := fake.Services(ctx)
		must(t, err)
		if !slices.ContainsFunc(svcs, func(si ipvs.ServiceInfo) bool { return si.Service.Key() == ipvs.ServiceKey{Family: f, FWMark: 7} }) {
			t.Errorf("no %v fwmark 7 virtual server:\n%s", f, fake.Dump())
		}
	}
	if len(svcsOf(t, fake)) != 2 {
		t.Errorf("virtual servers:\n%s", fake.Dump())
	}
	dump := rules[IPv4].Dump() + rules[IPv6].Dump()
	for _, m := range []string{"198.18.100.1 . tcp . 80", "198.18.100.1 . tcp . 443", "198.18.102.1 . tcp . 443", "2001:db8:100::1 . tcp . 443"} {
		if !strings.Contains(nftSet(dump, "external-ip-local"), m) {
			t.Errorf("external-ip-local lacks %s:\n%s", m, dump)
		}
	}
	for _, set := range []string{"cluster-ip", "external-ip", "load-balancer"} {
		if strings.Contains(nftSet(dump, set), "elements") {
			t.Errorf("set %s, which marks for masquerade, has members:\n%s", set, dump)
		}
	}
	for _, f := range []Family{IPv4, IPv6} {
		r, err := rules[f].Owned(ctx)
		must(t, err)
		if want := ledgerMember(ipvs.ServiceKey{Family: f, FWMark: 7}); !slices.Equal(r.Members(iptables.VirtualServers), []iptables.Member{want}) {
			t.Errorf("%v ledger: %v, want %v", f, r.Members(iptables.VirtualServers), want)
		}
	}
	addrs, err := link.Addrs(ctx, DefaultLinkName)
	must(t, err)
	if len(addrs) != 3 {
		t.Errorf("VIPs bound: %v", addrs)
	}
	res, err = newP().Sync(ctx, &st)
	if err != nil || res.Plan.IPVSAdd.Len()+res.Plan.IPVSDelete.Len()+len(res.Plan.Bind)+len(res.Plan.Unbind) != 0 {
		t.Errorf("a restarted Proxier's first Sync: %v, plan:\n%v", err, res.Plan)
	}
	p := newP()
	must(t, p.Cleanup(ctx))
	if d := fake.Dump(); d != "" {
		t.Errorf("Cleanup by a restarted Proxier left:\n%s", d)
	}
}

func svcsOf(t *testing.T, f *ipvstest.Fake) []ipvs.ServiceInfo {
	t.Helper()
	svcs, err := f.Services(context.Background())
	must(t, err)
	return svcs
}

// Another program's virtual server at the mark is a conflict, not a
// takeover; an Update cannot take a mark or a VIP:port a firewall-mark
// service holds.
func TestFWMarkConflicts(t *testing.T) {
	ctx := context.Background()
	n := newFakeNode(t)
	foreign := ipvs.Service{Family: IPv4, FWMark: 7, Scheduler: "wlc"}
	must(t, n.ipvs.AddService(ctx, foreign))
	st := State{Services: map[string]Service{"web": webMarked()}}
	var ce *ConflictError
	if _, err := n.p.Sync(ctx, &st); !errors.As(err, &ce) || len(ce.Conflicts) != 1 || ce.Conflicts[0].Kind != FirewallMark {
		t.Fatalf("sync over another program's fwmark 7: %v", err)
	}
	must(t, n.ipvs.DeleteService(ctx, foreign.Key()))
	if _, err := n.p.Sync(ctx, &st); err != nil {
		t.Fatal(err)
	}
	again := webMarked()
	again.ClusterIPs, again.ExternalIPs = []netip.Addr{a("198.18.100.5")}, nil
	onVIP := Service{ClusterIPs: []netip.Addr{a("198.18.100.1")}, Ports: []Port{{Protocol: TCP, Port: 443}}}
	_, err := n.p.Update(ctx, map[string]*Service{"again": &again, "on-vip": &onVIP})
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 2 ||
		ve.Problems[0].String() != `services["again"].firewallMark: 0x7 is already the IPv4 mark of services["web"]` ||
		ve.Problems[1].String() != `services["on-vip"].ports[0]: 198.18.100.1:443/TCP is already served by services["web"].ports[1]` {
		t.Errorf("update: %v", err)
	}
}

func TestFWMarkLedgerKeys(t *testing.T) {
	for _, f := range []Family{IPv4, IPv6} {
		for _, m := range []uint32{1, 7, 0xff, 0x100, 0x10000, 0x4000_0001, 0xffffffff} {
			k := ipvs.ServiceKey{Family: f, FWMark: m}
			mem := ledgerMember(k)
			if got := ledgerKey(mem); got != k {
				t.Errorf("%v mark %#x: member %v reads back as %v", f, m, mem, got)
			}
			if mem.Port == 0 || !(mem.Addr.IsLoopback() || mem.Addr.IsLinkLocalUnicast()) {
				t.Errorf("%v mark %#x: member %v", f, m, mem)
			}
		}
	}
	for _, m := range []iptables.Member{
		iptables.AddrPort(a("198.18.100.1"), TCP, 80),
		iptables.AddrPort(a("127.0.0.1"), UDP, 1),
		iptables.AddrPort(a("127.0.0.0"), TCP, 1), // mark 0
		iptables.AddrPort(a("127.0.0.1"), TCP, 300),
	} {
		if k, ok := fwmarkLedgerKey(m); ok {
			t.Errorf("%v read as %v", m, k)
		}
	}
}

// nftSet is the text of set name's blocks in an nft dump (every family's).
func nftSet(dump, name string) string {
	var b strings.Builder
	for _, part := range strings.Split(dump, "set "+name+" {")[1:] {
		end, _, _ := strings.Cut(part, "}")
		b.WriteString(end)
	}
	return b.String()
}

// An endpoint that leaves a firewall-mark service drains as a TCP one
// does: weight 0, kept until Drain finds it idle.
func TestFWMarkDestinationsDrain(t *testing.T) {
	ctx := context.Background()
	n := newFakeNode(t)
	svc := webMarked()
	st := State{Services: map[string]Service{"web": svc}, Node: dualStackNode}
	_, err := n.p.Sync(ctx, &st)
	must(t, err)
	svc.Endpoints = svc.Endpoints[1:]
	res, err := n.p.Update(ctx, map[string]*Service{"web": &svc})
	must(t, err)
	if got := kinds(&res.Plan.IPVSAdd); !slices.Equal(got, []string{"update destination fwmark 7 (IPv4) -> 198.18.1.1:0"}) || res.Plan.IPVSDelete.Len() != 0 {
		t.Errorf("plan of an endpoint's removal: %q, deletes %d", got, res.Plan.IPVSDelete.Len())
	}
	if !strings.Contains(n.ipvs.Dump(), "-a -f 7 -r 198.18.1.1:0 -m -w 0\n") {
		t.Errorf("not draining:\n%s", n.ipvs.Dump())
	}
	n.drainAll(t)
	if strings.Contains(n.ipvs.Dump(), "198.18.1.1:0") {
		t.Errorf("drained, yet:\n%s", n.ipvs.Dump())
	}
}

// The file keys of the knobs and the mark: read, written back the same,
// and a mark out of 32 bits refused with its line.
func TestFWMarkAndKnobsFileKeys(t *testing.T) {
	const doc = `services:
  web:
    clusterIPs: [198.18.100.1]
    ports:
      - {name: dns, protocol: UDP, port: 53}
    firewallMark: 4294967295
    sessionAffinity: {timeout: 1m0s, ipv4PrefixLen: 24, ipv6PrefixLen: 64}
    onePacket: true
`
	s, err := DecodeState([]byte(doc))
	must(t, err)
	svc := s.Services["web"]
	if svc.FirewallMark != 0xffffffff || !svc.OnePacket || *svc.SessionAffinity != (SessionAffinity{Timeout: time.Minute, IPv4PrefixLen: 24, IPv6PrefixLen: 64}) {
		t.Errorf("decoded %+v", svc)
	}
	out, err := EncodeStateYAML(s)
	must(t, err)
	for _, want := range []string{"firewallMark: 4294967295\n", "sessionAffinity: {timeout: 1m, ipv4PrefixLen: 24, ipv6PrefixLen: 64}\n", "onePacket: true\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("encoded lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"4294967296", "-1", `"7"`} {
		_, err := DecodeState([]byte(strings.Replace(doc, "4294967295", bad, 1)))
		if err == nil || !strings.Contains(err.Error(), "firewallMark") || !strings.Contains(err.Error(), "(line 6)") {
			t.Errorf("firewallMark %s: %v", bad, err)
		}
	}
}

// A service becomes a firewall-mark service and back by Update: the
// address virtual servers give way to the mark's and return, the VIPs
// stay bound, and the kernel ends as a fresh Sync of the last State leaves it.
func TestFWMarkSwitchByUpdate(t *testing.T) {
	ctx := context.Background()
	n := newFakeNode(t)
	plain := webMarked()
	plain.FirewallMark, plain.OnePacket = 0, false
	st := State{Services: map[string]Service{"web": plain}, Node: dualStackNode}
	_, err := n.p.Sync(ctx, &st)
	must(t, err)
	before := n.kernel(t)
	marked := webMarked()
	_, err = n.p.Update(ctx, map[string]*Service{"web": &marked})
	must(t, err)
	n.drainAll(t)
	d := n.ipvs.Dump()
	if !strings.Contains(d, "-A -f 7 -s rr -p 60\n") || strings.Contains(d, ":80 ") || strings.Contains(d, ":443 ") {
		t.Errorf("after the switch to mark 7:\n%s", d)
	}
	_, err = n.p.Update(ctx, map[string]*Service{"web": &plain})
	must(t, err)
	n.drainAll(t)
	if got := n.kernel(t); got != before {
		t.Errorf("switched back:\n%s\nwant:\n%s", got, before)
	}
}

// While adopting kube-proxy's node, another program's virtual server at a
// wanted mark is still a conflict: kube-proxy makes none.
func TestFWMarkNotAdopted(t *testing.T) {
	ctx := context.Background()
	ipv, link := ipvstest.New(), dummytest.New()
	must(t, link.AddLinkAlias("kube-ipvs0", "dummy", ""))
	must(t, ipv.AddService(ctx, ipvs.Service{Family: IPv4, FWMark: 7, Scheduler: "wlc"}))
	p, err := New(&Config{KubeProxyNames: true, AdoptKubeProxy: true},
		Deps{IPVS: ipv, Link: link, Sysctls: sysctltest.New(""), Rules: map[Family]Rules{IPv4: iptablestest.New(IPv4)}})
	must(t, err)
	svc := webMarked()
	svc.ClusterIPs, svc.Endpoints = svc.ClusterIPs[:1], svc.Endpoints[:2]
	var ce *ConflictError
	if _, err := p.Sync(ctx, &State{Services: map[string]Service{"web": svc}}); !errors.As(err, &ce) {
		t.Errorf("sync: %v, want a *ConflictError", err)
	}
	if !strings.Contains(ipv.Dump(), "-A -f 7 -s wlc\n") {
		t.Errorf("their fwmark service changed:\n%s", ipv.Dump())
	}
}
