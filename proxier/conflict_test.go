package proxier

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/ipvs"
)

// withThief is oneService plus a service that wants the VIP:port of
// foreignVS.
func withThief() State {
	s := oneService()
	s.Services["thief"] = Service{
		ClusterIPs: []netip.Addr{a("198.18.200.1")},
		Ports:      []Port{{Name: "x", Protocol: TCP, Port: 8000}},
		Endpoints:  []Endpoint{{Addr: a("198.18.1.1"), Ready: true}},
	}
	return s
}

var foreignVS = ipvs.Service{Family: ipvs.IPv4, Protocol: ipvs.TCP, Addr: a("198.18.200.1"), Port: 8000, Scheduler: "wrr"}

func wantConflict(t *testing.T, err error) {
	t.Helper()
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, fs.ErrExist) {
		t.Fatalf("want a *ConflictError wrapping fs.ErrExist, got %v", err)
	}
	if len(ce.Conflicts) != 1 || ce.Conflicts[0].ServiceID != "thief" || ce.Conflicts[0].Foreign.Key() != foreignVS.Key() {
		t.Errorf("conflicts %+v", ce.Conflicts)
	}
	if msg := err.Error(); !strings.Contains(msg, `services["thief"]`) || !strings.Contains(msg, "198.18.200.1:8000") || !strings.Contains(msg, "wrr") {
		t.Errorf("error does not name both sides: %v", err)
	}
}

func TestAForeignVirtualServerAtAWantedKeyIsAConflict(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	must(t, r.ipvs.Fake.AddService(ctx, foreignVS))
	before := r.ipvs.Dump()
	s := withThief()
	_, err := r.p.Sync(ctx, &s)
	wantConflict(t, err)
	if got := r.ipvs.Dump(); got != before || len(r.rules.applied) != 0 || r.link.calls > 1 {
		t.Errorf("a conflicting sync changed something: ipvs\n%s\nrules applied %d, link calls %d", got, len(r.rules.applied), r.link.calls)
	}
	// Without the thief, the sync goes through and leaves the foreign one.
	r.sync(t, oneService())
	checkFakeForeign(t, r.ipvs.Dump())
	// Once the foreign one is gone, the thief gets its VIP:port.
	must(t, r.ipvs.Fake.DeleteService(ctx, foreignVS.Key()))
	r.sync(t, withThief())
	if got := r.ipvs.Dump(); !strings.Contains(got, "-A -t 198.18.200.1:8000 -s rr\n") {
		t.Errorf("the freed VIP:port was not taken:\n%s", got)
	}
}

// checkFakeForeign fails t unless dump has foreignVS as it was made.
func checkFakeForeign(t *testing.T, dump string) {
	t.Helper()
	if !strings.Contains(dump, "-A -t 198.18.200.1:8000 -s wrr\n") || strings.Contains(dump, "198.18.200.1:8000 -r") {
		t.Errorf("foreign virtual server changed:\n%s", dump)
	}
}

func TestAForeignVirtualServerMadeWhileRunningIsNotTakenOver(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	r.sync(t, oneService())
	must(t, r.ipvs.Fake.AddService(ctx, foreignVS)) // someone else, after our first sync
	s := withThief()
	if _, err := r.p.Sync(ctx, &s); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("adding over a foreign virtual server: %v", err)
	}
	s = withThief()
	_, err := r.p.Sync(ctx, &s)
	wantConflict(t, err)
	checkFakeForeign(t, r.ipvs.Dump())
	must(t, r.p.Cleanup(ctx))
	if got := r.ipvs.Dump(); got != "-A -t 198.18.200.1:8000 -s wrr\n" {
		t.Errorf("after Cleanup:\n%s", got)
	}
}

func TestANewProxierTakesOverAnEarlierOnesVirtualServers(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	s := oneService()
	web := s.Services["web"]
	web.Ports[0].NodePort = 30080
	s.Node.Addresses = []netip.Addr{a("198.18.0.10")}
	s.Services["web"] = web
	s.Services["old"] = Service{
		ClusterIPs: []netip.Addr{a("198.18.100.9")},
		Ports:      []Port{{Name: "x", Protocol: UDP, Port: 53}},
		Endpoints:  []Endpoint{{Addr: a("198.18.1.1"), Ready: true}},
	}
	r.sync(t, s)
	// A second Proxier over the same kernel (a restart) takes everything
	// over: its first sync changes no virtual server and binds nothing,
	// except that what the State no longer has ("old", on an address of
	// the VIP link) goes, as its unbind and one delete.
	delete(s.Services, "old")
	p2, err := New(nil, Deps{IPVS: r.ipvs, Link: r.link, Sysctls: r.sys, Rules: map[Family]Rules{IPv4: r.rules}})
	must(t, err)
	res, err := p2.Sync(ctx, &s)
	must(t, err)
	if res.Plan.IPVSAdd.Len() != 0 || len(res.Plan.Bind) != 0 ||
		!slices.Equal(kinds(&res.Plan.IPVSDelete), []string{"delete service udp 198.18.100.9:53"}) ||
		!slices.Equal(res.Plan.Unbind, []netip.Addr{a("198.18.100.9")}) {
		t.Errorf("takeover plan:\n%v", res.Plan)
	}
	if got := r.ipvs.Dump(); strings.Contains(got, "198.18.100.9") {
		t.Errorf("the earlier run's stale virtual server is left:\n%s", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
