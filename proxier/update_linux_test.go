package proxier

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestIntegrationUpdate drives a Proxier the way an informer would, one
// service at a time through Update, under each back end, on a node with
// another program's objects: a service added answers from its backend, an
// endpoint change moves new connections, a service removed stops answering
// and leaves nothing behind in any reference tool's view, and the back end
// writes only the set members that change. A whole-State Sync of the
// result then finds nothing to do, and Cleanup leaves the other program's
// objects as they were.
func TestIntegrationUpdate(t *testing.T) {
	for _, be := range []Backend{NFTables, IPTables} {
		t.Run(be.String(), func(t *testing.T) {
			t.Parallel()
			tp := newTopology(t, 1, 3)
			tp.addForeign(t)
			testUpdate(t, tp, be)
		})
	}
}

func testUpdate(t *testing.T, tp *topology, be Backend) {
	ctx := context.Background()
	k := tp.newProxier(t, Config{Backend: be})
	c := tp.clients[0]
	b1, b2, b3 := tp.backends[0], tp.backends[1], tp.backends[2]
	web := Service{ClusterIPs: []netip.Addr{a("198.18.100.1")}, Ports: []Port{portHTTP}, Endpoints: tp.endpoints(true, false, []int{0, 1})}
	k.sync(t, State{Node: Node{Addresses: []netip.Addr{c.nodeV4}}, Services: map[string]Service{"web": web}})
	wantCounts(t, "web", c.tcp(t, ap("198.18.100.1:80"), 2), map[string]int{b1.name: 1, b2.name: 1})

	update := func(what string, changes map[string]*Service) *Result {
		t.Helper()
		res, err := k.p.Update(ctx, changes)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		k.checkForeignServer(t)
		if st := k.rules[IPv4].LastStats(); st.Full {
			t.Errorf("%s: the back end wrote everything: %+v", what, st)
		}
		return res
	}
	api := Service{ClusterIPs: []netip.Addr{a("198.18.100.8")}, Ports: []Port{portHTTP}, Endpoints: tp.endpoints(true, false, []int{2})}
	res := update("adding api", map[string]*Service{"api": &api})
	if res.SetElements != 3 {
		t.Errorf("adding api: %d set elements written, want 3 (its cluster IP, VIP and ledger entry)", res.SetElements)
	}
	wantCounts(t, "api", c.tcp(t, ap("198.18.100.8:80"), 2), map[string]int{b3.name: 2})
	wantCounts(t, "web beside api", c.tcp(t, ap("198.18.100.1:80"), 2), map[string]int{b1.name: 1, b2.name: 1})

	web.Endpoints = tp.endpoints(true, false, []int{2})
	res = update("moving web to backend-3", map[string]*Service{"web": &web})
	if n := res.Plan.IPVSAdd.Len(); n != 3 || res.SetElements != 0 || len(res.Plan.Bind) != 0 {
		t.Errorf("moving web: %d IPVS requests (want 3: one add, two drains), %d set elements, %d VIPs bound:\n%v",
			n, res.SetElements, len(res.Plan.Bind), res.Plan)
	}
	wantCounts(t, "web after the move", c.tcp(t, ap("198.18.100.1:80"), 2), map[string]int{b3.name: 2})

	update("removing api", map[string]*Service{"api": nil})
	if r, err := c.tcpOnce(t, ap("198.18.100.8:80"), 2*time.Second); err == nil {
		t.Errorf("api answered after it was removed: %v", r)
	}
	s := tp.snapshot(t)
	for sec, text := range s {
		if strings.Contains(text, "198.18.100.8") {
			t.Errorf("%s still shows the removed service's 198.18.100.8:\n%s", sec, text)
		}
	}
	checkForeign(t, s)
	if be == IPTables {
		checkContains(t, s, "ipset", "add IPVSKIT-CLUSTER-IP 198.18.100.1,tcp:80")
	} else {
		checkContains(t, s, "nft", "198.18.100.1 . tcp . 80")
	}

	res, err := k.p.Sync(ctx, &State{Node: Node{Addresses: []netip.Addr{c.nodeV4}}, Services: map[string]Service{"web": web}})
	if err != nil || !res.Plan.Empty() {
		t.Errorf("a whole-State Sync of what Update made: %v, plan:\n%v", err, res.Plan)
	}
	k.cleanup(t, tp)
}
