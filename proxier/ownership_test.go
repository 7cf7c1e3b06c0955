package proxier

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// A back end whose names are taken by another program's objects stops the
// first Sync before anything is touched: no link, no sysctl, no virtual
// server. Cleanup leaves those objects (the back end's own Cleanup skips
// them) and still removes what the proxier owns.
func TestForeignRulesObjectsStopTheFirstSyncBeforeAnythingChanges(t *testing.T) {
	ctx := context.Background()
	ipv, link, sys, rules := ipvstest.New(), dummytest.New(), sysctltest.New(""), iptablestest.New(iptables.IPv4)
	rules.SetForeign("ip ipvskit")
	p, err := New(nil, Deps{IPVS: ipv, Link: link, Sysctls: sys, Rules: map[Family]Rules{IPv4: rules}})
	must(t, err)
	sysBefore := sys.Dump()
	s := oneService()
	_, err = p.Sync(ctx, &s)
	var fe *iptables.ForeignError
	if !errors.As(err, &fe) || !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Sync over foreign rules objects: %v, want a *iptables.ForeignError", err)
	}
	var oe *OpError
	if !errors.As(err, &oe) || oe.Subsystem != SubsystemRules {
		t.Errorf("error %v does not name the rules subsystem", err)
	}
	if got := ipv.Dump(); got != "" {
		t.Errorf("IPVS changed:\n%s", got)
	}
	if got := link.Links(); len(got) != 0 {
		t.Errorf("links made: %v", got)
	}
	if got := sys.Dump(); got != sysBefore {
		t.Errorf("sysctls changed:\n%s", got)
	}
	must(t, p.Cleanup(ctx))
	// Once the other program's objects are gone, the proxier starts.
	rules.SetForeign("")
	if _, err := p.Sync(ctx, &s); err != nil {
		t.Fatal(err)
	}
	if got := rules.Ruleset().Members(iptables.VirtualServers); len(got) != 1 || got[0] != iptables.AddrPort(a("198.18.100.1"), iptables.TCP, 80) {
		t.Errorf("ledger %v, want the one virtual server", got)
	}
}

// The ledger is what proves ownership after a restart: a new Proxier over
// the same kernel deletes an earlier run's virtual server that its State no
// longer has, and one the ledger lacks (made by another program at one of
// the earlier run's VIPs) is left.
func TestTheLedgerDecidesWhatARestartOwns(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	s := oneService()
	r.sync(t, s)
	theirs := foreignVS
	theirs.Addr, theirs.Port = a("198.18.100.1"), 8443
	must(t, r.ipvs.Fake.AddService(ctx, theirs))
	p2, err := New(nil, Deps{IPVS: r.ipvs, Link: r.link, Sysctls: r.sys, Rules: map[Family]Rules{IPv4: r.rules}})
	must(t, err)
	empty := State{}
	res, err := p2.Sync(ctx, &empty)
	must(t, err)
	if res.Plan.IPVSDelete.Len() != 1 || len(res.Plan.Unbind) != 1 {
		t.Errorf("restart with an empty State: plan\n%s", res.Plan)
	}
	if got := r.ipvs.Dump(); got != "-A -t 198.18.100.1:8443 -s wrr\n" {
		t.Errorf("after the restart's sync:\n%s", got)
	}
	if got := r.rules.last().Members(iptables.VirtualServers); len(got) != 0 {
		t.Errorf("ledger after the removals: %v", got)
	}
}

// A node kube-proxy configured: its virtual server (no ledger of ours), its
// unmarked kube-ipvs0 with the VIP bound. Without AdoptKubeProxy the first
// Sync refuses the link and changes nothing; with it, the Sync marks the
// link and takes the virtual server as it is: nothing added, deleted or
// bound, and the ledger then holds it.
func TestAdoptKubeProxyTakesItsObjectsInPlace(t *testing.T) {
	ctx := context.Background()
	s := oneService()
	kube := &Config{KubeProxyNames: true}
	// "kube-proxy" leaves a virtual server as it would: made by a first
	// Proxier over a world whose ledger and link are then thrown away.
	ipv := ipvstest.New()
	first, err := New(kube, Deps{IPVS: ipv, Link: dummytest.New(), Sysctls: sysctltest.New(""),
		Rules: map[Family]Rules{IPv4: iptablestest.New(iptables.IPv4)}})
	must(t, err)
	_, err = first.Sync(ctx, &s)
	must(t, err)
	before := ipv.Dump()
	link := dummytest.New()
	must(t, link.AddLinkAlias("kube-ipvs0", "dummy", ""))
	must(t, link.AddAddr("kube-ipvs0", netip.MustParsePrefix("198.18.100.1/32")))
	deps := Deps{IPVS: ipv, Link: link, Sysctls: sysctltest.New(""), Rules: map[Family]Rules{IPv4: iptablestest.New(iptables.IPv4)}}

	refusing, err := New(kube, deps)
	must(t, err)
	if _, err := refusing.Sync(ctx, &s); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Sync without AdoptKubeProxy over kube-proxy's link: %v, want a foreign-object error", err)
	}
	if got := ipv.Dump(); got != before {
		t.Fatalf("IPVS changed by the refused Sync:\n%s", got)
	}

	adopting, err := New(&Config{KubeProxyNames: true, AdoptKubeProxy: true}, deps)
	must(t, err)
	res, err := adopting.Sync(ctx, &s)
	must(t, err)
	if res.Plan.IPVSAdd.Len()+res.Plan.IPVSDelete.Len()+len(res.Plan.Bind)+len(res.Plan.Unbind) != 0 {
		t.Errorf("the adopting Sync changed IPVS or the link:\n%s", res.Plan)
	}
	if got := ipv.Dump(); got != before {
		t.Errorf("IPVS after adoption:\n%s\nwant\n%s", got, before)
	}
	if _, err := link.Ensure(ctx, "kube-ipvs0"); err != nil {
		t.Errorf("kube-ipvs0 is not marked as ours after adoption: %v", err)
	}
	if got := deps.Rules[IPv4].(*iptablestest.Fake).Ruleset().Members(iptables.VirtualServers); len(got) != 1 {
		t.Errorf("ledger after adoption: %v, want the one virtual server", got)
	}
}

// AdoptKubeProxy is only for kube-proxy's names, and needs a link client
// that can adopt.
func TestAdoptKubeProxyNeedsKubeProxyNamesAndAnAdoptingLink(t *testing.T) {
	deps := Deps{IPVS: ipvstest.New(), Link: dummytest.New(), Sysctls: sysctltest.New(""), Rules: map[Family]Rules{IPv4: iptablestest.New(iptables.IPv4)}}
	var ve *ValidationError
	if _, err := New(&Config{AdoptKubeProxy: true}, deps); !errors.As(err, &ve) || !strings.Contains(err.Error(), "adoptKubeProxy") {
		t.Errorf("AdoptKubeProxy without KubeProxyNames: %v, want a *ValidationError naming config.adoptKubeProxy", err)
	}
	deps.Link = struct{ Link }{deps.Link}
	if _, err := New(&Config{KubeProxyNames: true, AdoptKubeProxy: true}, deps); err == nil || !strings.Contains(err.Error(), "Adopt") {
		t.Errorf("AdoptKubeProxy with a link client lacking Adopt: %v, want an error", err)
	}
}
