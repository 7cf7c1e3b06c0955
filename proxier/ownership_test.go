package proxier

import (
	"context"
	"errors"
	"io/fs"
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
