package proxier

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// excludedVS and strayVS are virtual servers another program left on
// kube-ipvs0, with a destination each: one inside the excluded prefix, one
// outside it.
var (
	excludedVS = ipvs.Service{Family: ipvs.IPv4, Protocol: ipvs.TCP, Addr: a("198.18.9.1"), Port: 80, Scheduler: "wrr"}
	strayVS    = ipvs.Service{Family: ipvs.IPv4, Protocol: ipvs.TCP, Addr: a("198.18.8.1"), Port: 80, Scheduler: "wrr"}
	theirDest  = ipvs.Destination{Addr: a("198.18.11.2"), Port: 8080, Forward: ipvs.Masq, Weight: 1}
	excluded   = []netip.Prefix{netip.MustParsePrefix("198.18.9.0/24")}
)

// A node kube-proxy configured, with two more virtual servers on
// addresses of its kube-ipvs0. An adopting Proxier takes what is on the
// link as kube-proxy's and deletes what its State lacks, but for the
// virtual server inside ExcludeCIDRs, which stays with its destination and
// its address through a Sync, a Sync of nothing, Reconcile and Cleanup
// (which then keeps the link).
func TestExcludeCIDRsAreNeverTheProxiers(t *testing.T) {
	ctx := context.Background()
	ipv, link := ipvstest.New(), dummytest.New()
	must(t, link.AddLinkAlias("kube-ipvs0", "dummy", ""))
	for _, vs := range []ipvs.Service{excludedVS, strayVS} {
		must(t, ipv.AddService(ctx, vs))
		must(t, ipv.AddDestination(ctx, vs.Key(), theirDest))
		must(t, link.AddAddr("kube-ipvs0", netip.PrefixFrom(vs.Addr, 32)))
	}
	p, err := New(&Config{KubeProxyNames: true, AdoptKubeProxy: true, ExcludeCIDRs: excluded},
		Deps{IPVS: ipv, Link: link, Sysctls: sysctltest.New(""), Rules: map[Family]Rules{IPv4: iptablestest.New(iptables.IPv4)}})
	must(t, err)
	check := func(when string) {
		t.Helper()
		if got := ipv.Dump(); !strings.Contains(got, "-A -t 198.18.9.1:80 -s wrr\n-a -t 198.18.9.1:80 -r 198.18.11.2:8080 -m -w 1\n") {
			t.Errorf("%s: the excluded virtual server or its destination is gone:\n%s", when, got)
		}
		if ps, _ := link.LinkAddrs("kube-ipvs0"); !slices.Contains(ps, netip.MustParsePrefix("198.18.9.1/32")) {
			t.Errorf("%s: the excluded address is gone from kube-ipvs0: %v", when, ps)
		}
	}
	s := oneService()
	_, err = p.Sync(ctx, &s)
	must(t, err)
	check("after the adopting Sync")
	if got := ipv.Dump(); strings.Contains(got, "198.18.8.1") {
		t.Errorf("the virtual server outside ExcludeCIDRs, taken as kube-proxy's, is left:\n%s", got)
	}
	if ps, _ := link.LinkAddrs("kube-ipvs0"); slices.Contains(ps, netip.MustParsePrefix("198.18.8.1/32")) {
		t.Errorf("the address outside ExcludeCIDRs is left: %v", ps)
	}
	_, err = p.Sync(ctx, &State{})
	must(t, err)
	check("after a Sync of nothing")
	rep, err := p.Reconcile(ctx)
	must(t, err)
	if len(rep.Drift) != 0 {
		t.Errorf("Reconcile found drift in what is excluded:\n%s", rep)
	}
	check("after Reconcile")
	_, err = p.Sync(ctx, &s)
	must(t, err)
	must(t, p.Cleanup(ctx))
	check("after Cleanup")
	if got := ipv.Dump(); strings.Contains(got, "198.18.100.1") {
		t.Errorf("Cleanup left the Proxier's own virtual server:\n%s", got)
	}
	if ps, _ := link.LinkAddrs("kube-ipvs0"); slices.Contains(ps, netip.MustParsePrefix("198.18.100.1/32")) {
		t.Errorf("Cleanup left the Proxier's own VIP on the kept link: %v", ps)
	}
}

// A virtual server and VIP an earlier run made (in its ledger) that now
// lie inside ExcludeCIDRs are handed over: a restart with a State of
// nothing keeps them, the ledger lets them go, and Cleanup leaves them.
// Without the exclusion the same restart deletes them.
func TestExcludeCIDRsHandOverAnEarlierRunsVirtualServer(t *testing.T) {
	for _, exclude := range []bool{true, false} {
		ctx := context.Background()
		r := newRig(t, nil)
		r.sync(t, oneService())
		cfg := &Config{}
		if exclude {
			cfg.ExcludeCIDRs = []netip.Prefix{netip.MustParsePrefix("198.18.100.0/24")}
		}
		p2, err := New(cfg, Deps{IPVS: r.ipvs, Link: r.link, Sysctls: r.sys, Rules: map[Family]Rules{IPv4: r.rules}})
		must(t, err)
		_, err = p2.Sync(ctx, &State{})
		must(t, err)
		kept := strings.Contains(r.ipvs.Dump(), "-A -t 198.18.100.1:80 ")
		ps, _ := r.link.LinkAddrs(DefaultLinkName)
		bound := slices.Contains(ps, netip.MustParsePrefix("198.18.100.1/32"))
		if kept != exclude || bound != exclude {
			t.Errorf("exclude %v: after the restart's Sync of nothing the virtual server is kept %v, its VIP bound %v; want %v",
				exclude, kept, bound, exclude)
		}
		if got := r.rules.last().Members(iptables.VirtualServers); len(got) != 0 {
			t.Errorf("exclude %v: ledger after the restart's Sync: %v, want none", exclude, got)
		}
		if !exclude {
			continue
		}
		must(t, p2.Cleanup(ctx))
		if !strings.Contains(r.ipvs.Dump(), "-A -t 198.18.100.1:80 ") {
			t.Errorf("Cleanup deleted the excluded virtual server:\n%s", r.ipvs.Dump())
		}
		if ps, ok := r.link.LinkAddrs(DefaultLinkName); !ok || !slices.Contains(ps, netip.MustParsePrefix("198.18.100.1/32")) {
			t.Errorf("Cleanup took the excluded address (link kept %v): %v", ok, ps)
		}
	}
}

// Config.ExcludeCIDRs are checked as prefixes; a State's VIPs may not lie
// inside them, in Sync as in Update; node addresses inside them carry no
// node ports.
func TestExcludeCIDRsValidation(t *testing.T) {
	bad := &Config{ExcludeCIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.9.0/24"), netip.MustParsePrefix("198.18.9.1/16"), {}}}
	err := bad.Validate()
	for _, want := range []string{"config.excludeCIDRs[1]: 198.18.9.1/16 has host bits set", "config.excludeCIDRs[2]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "excludeCIDRs[0]") {
		t.Errorf("Validate refuses a good prefix: %v", err)
	}

	cfg := &Config{ExcludeCIDRs: []netip.Prefix{netip.MustParsePrefix("2001:db8::/64"), netip.MustParsePrefix("198.18.100.0/30")}}
	s := oneService()
	web := s.Services["web"]
	web.ExternalIPs = []netip.Addr{a("198.18.102.1"), a("198.18.100.3")}
	s.Services["web"] = web
	err = s.Validate(cfg)
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 2 {
		t.Fatalf("Validate: %v, want two problems", err)
	}
	for i, want := range []string{
		`services["web"].clusterIPs[0]: 198.18.100.1 is inside config.excludeCIDRs[1] 198.18.100.0/30`,
		`services["web"].externalIPs[1]: 198.18.100.3 is inside config.excludeCIDRs[1] 198.18.100.0/30`,
	} {
		if !strings.HasPrefix(ve.Problems[i].String(), want) {
			t.Errorf("problem %d: %s, want %s", i, ve.Problems[i], want)
		}
	}

	r := newRig(t, cfg)
	ok := State{Services: map[string]Service{"np": {
		ClusterIPs: []netip.Addr{a("198.18.100.9")},
		Ports:      []Port{{Name: "http", Protocol: TCP, Port: 80, NodePort: 30080}},
	}}, Node: Node{Addresses: []netip.Addr{a("198.18.100.1"), a("198.18.0.10")}}}
	r.sync(t, ok)
	got := r.ipvs.Dump()
	if !strings.Contains(got, "198.18.0.10:30080") || strings.Contains(got, "198.18.100.1:30080") {
		t.Errorf("node ports, with node address 198.18.100.1 excluded:\n%s", got)
	}
	web = oneService().Services["web"]
	web.ClusterIPs = []netip.Addr{a("198.18.100.2")}
	if _, err := r.p.Update(context.Background(), map[string]*Service{"web": &web}); !errors.As(err, &ve) ||
		!strings.Contains(err.Error(), `services["web"].clusterIPs[0]: 198.18.100.2 is inside config.excludeCIDRs[1]`) {
		t.Errorf("Update with an excluded VIP: %v, want a *ValidationError naming it", err)
	}
}
