package proxier

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// TestIntegrationExcludeCIDRs, under each back end and VIP mode: another
// program's virtual servers (made with ipvsadm, with a destination) on
// addresses it bound to the Proxier's VIP link, one inside ExcludeCIDRs and
// one outside, and a virtual server and VIP an earlier run made inside
// them. The excluded ones stay, with their destinations, addresses and
// traffic, through a restart's Sync, a Sync of nothing, Reconcile and
// Cleanup (which keeps the link); the earlier run's virtual server outside
// them goes at the restart, as without ExcludeCIDRs, and the other
// program's outside them stays as before.
func TestIntegrationExcludeCIDRs(t *testing.T) {
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) { testExcludeCIDRs(t, v) })
	}
}

func testExcludeCIDRs(t *testing.T, v variant) {
	ctx := context.Background()
	tp := newTopologyIn(t, v, 1, 2)
	tp.addForeign(t)
	c1, b1, b2 := tp.clients[0], tp.backends[0], tp.backends[1]
	web := func(vips ...string) State {
		var as []netip.Addr
		for _, s := range vips {
			as = append(as, a(s))
		}
		return State{Services: map[string]Service{"web": {
			ClusterIPs: as[:1], ExternalIPs: as[1:], Ports: []Port{portHTTP},
			Endpoints: tp.endpoints(true, false, []int{0}),
		}}}
	}
	// The earlier run, without ExcludeCIDRs: its cluster IP stays ours, its
	// external IP 198.18.60.5 is handed over.
	first := tp.newProxier(t, Config{Backend: v.be})
	first.sync(t, web("198.18.100.1", "198.18.60.5", "198.18.100.5"))
	// The other program's, on the link the earlier run made.
	tp.node.Exec(t, "sh", "-c", fmt.Sprintf("PATH=/usr/sbin:/sbin:/usr/bin:/bin\nset -e\n"+
		"ipvsadm -A -t 198.18.60.1:80 -s rr\nipvsadm -a -t 198.18.60.1:80 -r %[1]s:8080 -m -w 2\n"+
		"ipvsadm -A -t 198.18.61.1:80 -s rr\nipvsadm -a -t 198.18.61.1:80 -r %[1]s:8080 -m -w 2\n"+
		"ip addr add 198.18.60.1/32 dev %[2]s\nip addr add 198.18.61.1/32 dev %[2]s\n", b2.v4, DefaultLinkName))
	theirs := ap("198.18.60.1:80")
	kept := func(when string) {
		t.Helper()
		s := tp.snapshot(t)
		checkContains(t, s, "ipvsadm", "-A -t 198.18.60.1:80 -s rr", fmt.Sprintf("-a -t 198.18.60.1:80 -r %s:8080 -m -w 2", b2.v4),
			"-A -t 198.18.60.5:80 -s rr", fmt.Sprintf("-a -t 198.18.60.5:80 -r %s:8080 -m -w 1", b1.v4))
		checkContains(t, s, "addr", "198.18.60.1/32")
		checkForeign(t, s)
		wantCounts(t, "the excluded virtual server "+when, c1.tcp(t, theirs, 2), map[string]int{b2.name: 2})
		wantCounts(t, "the handed-over virtual server "+when, c1.tcp(t, ap("198.18.60.5:80"), 2), map[string]int{b1.name: 2})
	}
	kept("before the restart")

	k := tp.newProxier(t, Config{Backend: v.be, ExcludeCIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.60.0/24")}})
	k.sync(t, web("198.18.100.1"))
	kept("after the restart's Sync")
	s := tp.snapshot(t)
	checkLacks(t, s, "ipvsadm", "198.18.100.5:80")               // the earlier run's, outside: gone as ever
	checkContains(t, s, "ipvsadm", "-A -t 198.18.61.1:80 -s rr") // not the ledger's: another program's, as ever
	checkContains(t, s, "addr", "198.18.61.1/32")
	wantCounts(t, "ours after the restart", c1.tcp(t, ap("198.18.100.1:80"), 2), map[string]int{b1.name: 2})

	k.sync(t, State{})
	kept("after a Sync of nothing")
	checkLacks(t, tp.snapshot(t), "ipvsadm", "198.18.100.")
	rep, err := k.p.Reconcile(ctx)
	must(t, err)
	if len(rep.Drift) != 0 {
		t.Errorf("Reconcile reported the excluded objects as drift:\n%s", rep)
	}
	kept("after Reconcile")

	k.sync(t, web("198.18.100.1"))
	must(t, k.p.Cleanup(ctx))
	kept("after Cleanup")
	s = tp.snapshot(t)
	checkLacks(t, s, "ipvsadm", "198.18.100.")
	checkLacks(t, s, "nft", "table ip ipvskit")
	if strings.Contains(s["addr"], "198.18.100.1/32") || strings.Contains(s["route"], "198.18.100.1 dev "+DefaultLinkName) {
		t.Errorf("Cleanup left the Proxier's own VIP on the kept link:\n%s\n%s", s["addr"], s["route"])
	}
}
