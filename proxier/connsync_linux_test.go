package proxier

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/ipvs"
)

// failoverNet is the topology of the connection-sync test: two load
// balancers on one L2 segment (a bridge in the LAN namespace, which also
// routes for the client), both serving the same direct-routing service,
// and its backends on that segment:
//
//	client 198.18.171.2 -- .1 lan (routes the VIP to node A, later to node B)
//	lan br0 198.18.170.1 -- node A .10, node B .11, backends be1 .21, be2 .22
//
// The lan's route to the VIP is what VRRP moving the VIP would change: the
// VIP is bound on both nodes (the Proxier's VIP link), and the route, like
// the ARP answer of the VRRP master, picks which node gets the packets.
// With direct routing a backend answers the client straight through the
// lan, from the VIP, so a connection's replies never pass a node: only its
// requests move from A to B. Each backend holds the VIP on lo without
// answering ARP for it, greets with its name and echoes (serveEcho).
type failoverNet struct {
	lan, client *testutil.NetNS
	a, b        *topology // the nodes, for the Proxiers and the snapshot helpers
}

var (
	foVIP    = a("198.18.172.1")
	foClient = a("198.18.171.2")
)

const (
	foNodeA  = "198.18.170.10"
	foNodeB  = "198.18.170.11"
	foSyncID = 7
)

func newFailoverNet(t *testing.T) *failoverNet {
	t.Helper()
	fn := &failoverNet{lan: testutil.NewNetNS(t), client: testutil.NewNetNS(t), a: newTopology(t, 0, 0), b: newTopology(t, 0, 0)}
	sh(t, fn.lan, "sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0\n"+
		"ip link add br0 type bridge\nip addr add 198.18.170.1/24 dev br0\nip link set br0 up\n")
	veth(t, fn.lan, "c0", fn.client, "eth0")
	veth(t, fn.lan, "na", fn.a.node, "eth0")
	veth(t, fn.lan, "nb", fn.b.node, "eth0")
	for i := range 2 {
		be := testutil.NewNetNS(t)
		veth(t, fn.lan, fmt.Sprintf("be%d", i+1), be, "eth0")
		sh(t, be, up(fmt.Sprintf("198.18.170.2%d/24", i+1), "198.18.170.1")+
			"sysctl -qw net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2 net.ipv4.conf.eth0.arp_ignore=1 net.ipv4.conf.eth0.arp_announce=2\n"+
			"ip addr add "+foVIP.String()+"/32 dev lo\n")
		serveEcho(t, &host{name: fmt.Sprintf("be%d", i+1), ns: be}, fwdPort)
	}
	sh(t, fn.lan, "ip addr add 198.18.171.1/24 dev c0\n"+
		"for l in na nb be1 be2; do ip link set $l master br0; done\n"+
		"for l in c0 na nb be1 be2; do ip link set $l up; done\n"+
		"ip route add "+foVIP.String()+"/32 via "+foNodeA+"\n")
	sh(t, fn.client, up(foClient.String()+"/24", "198.18.171.1"))
	sh(t, fn.a.node, up(foNodeA+"/24", "198.18.170.1"))
	sh(t, fn.b.node, up(foNodeB+"/24", "198.18.170.1"))
	return fn
}

// sh runs script in ns with one exec (each costs seconds in the VM).
func sh(t *testing.T, ns *testutil.NetNS, script string) string {
	t.Helper()
	return ns.Exec(t, "sh", "-c", "PATH=/usr/sbin:/sbin:/usr/bin:/bin\nset -e\n"+script)
}

// failoverState is the service both nodes serve: the VIP on port 80, by
// direct routing, round robin over both backends.
func failoverState() State {
	return State{Services: map[string]Service{"web": {
		ExternalIPs: []netip.Addr{foVIP},
		Ports:       []Port{{Name: "http", Protocol: TCP, Port: fwdPort}},
		Forward:     ipvs.DirectRoute,
		Endpoints: []Endpoint{
			{Addr: a("198.18.170.21"), Ready: true},
			{Addr: a("198.18.170.22"), Ready: true},
		},
	}}}
}

// clientConns counts the IPVS connections from the client in node's table
// (/proc/net/ip_vs_conn, which is current; the counters are summed every
// 2 s).
func clientConns(t *testing.T, node *testutil.NetNS) int {
	t.Helper()
	var (
		b   []byte
		err error
	)
	node.Do(t, func() { b, err = os.ReadFile("/proc/thread-self/net/ip_vs_conn") })
	must(t, err)
	hex := fmt.Sprintf("%08X", foClient.As4())
	n := 0
	for _, l := range strings.Split(string(b), "\n")[1:] {
		if f := strings.Fields(l); len(f) > 1 && f[1] == hex {
			n++
		}
	}
	return n
}

// daemonsOn is ipvsadm's list of the sync daemons in ns.
func daemonsOn(t *testing.T, ns *testutil.NetNS) string {
	t.Helper()
	return strings.TrimSpace(ns.Exec(t, "ipvsadm", "-Ln", "--daemon"))
}

// TestIntegrationConnSync fails a long-lived TCP connection over from
// node A to node B, as VRRP moving the VIP would, with and without IPVS's
// connection sync (A a master, B a backup, run by their Proxiers'
// Config.SyncDaemons): with it, B learns the connection from A and the
// same connection carries on through B to the same backend, without a
// reset; without it, B has never heard of the connection and its own
// stack resets it (so the test can fail). Either way B balances new
// connections over both backends, and A sees none of them. A sync daemon
// stopped behind the Proxier's back is restarted by Reconcile (and the
// restarted one is what carries the connection). Another program's
// virtual server, nft table, ipset, chain, link and sync daemon on each
// node are untouched through Sync, Reconcile and Cleanup.
func TestIntegrationConnSync(t *testing.T) {
	for _, sync := range []bool{true, false} {
		name := "with-sync"
		if !sync {
			name = "without-sync"
		}
		t.Run(name, func(t *testing.T) { testConnSync(t, sync) })
	}
}

func testConnSync(t *testing.T, withSync bool) {
	ctx := context.Background()
	fn := newFailoverNet(t)
	fn.a.addForeign(t)
	fn.b.addForeign(t)
	// Another program's backup daemon on A: a role A's Proxier does not run.
	const theirs = "backup sync daemon (mcast=eth0, syncid=99, maxlen=1472, group=224.0.0.81, port=8848, ttl=1)"
	sh(t, fn.a.node, "ipvsadm --start-daemon backup --mcast-interface eth0 --syncid 99")
	var cfgA, cfgB Config
	if withSync {
		cfgA.SyncDaemons = []SyncDaemon{{State: ipvs.Master, Interface: "eth0", SyncID: foSyncID}}
		cfgB.SyncDaemons = []SyncDaemon{{State: ipvs.Backup, Interface: "eth0", SyncID: foSyncID}}
	}
	ka, kb := fn.a.newProxier(t, cfgA), fn.b.newProxier(t, cfgB)
	resA, resB := ka.sync(t, failoverState()), kb.sync(t, failoverState())
	master := "master sync daemon (mcast=eth0, syncid=7, maxlen=1472, group=224.0.0.81, port=8848, ttl=1)"
	if withSync {
		for _, c := range []struct {
			res  *Result
			want string
		}{{resA, "ipvsadm --start-daemon master --mcast-interface eth0 --syncid 7"}, {resB, "ipvsadm --start-daemon backup --mcast-interface eth0 --syncid 7"}} {
			if !strings.Contains(c.res.Plan.String(), "# ipvs: sync daemons (ipvsadm)\n"+c.want+"\n") {
				t.Errorf("first sync's plan lacks %q:\n%s", c.want, c.res.Plan)
			}
		}
		// Stopped behind its back: Reconcile starts it again.
		sh(t, fn.a.node, "ipvsadm --stop-daemon master")
		rep, err := ka.p.Reconcile(ctx)
		must(t, err)
		wantReport(t, rep, "ipvs: master sync daemon: missing")
		if got := daemonsOn(t, fn.a.node); got != master+"\n"+theirs {
			t.Errorf("node A's sync daemons after Reconcile:\n%s\nwant:\n%s\n%s", got, master, theirs)
		}
	}

	client := &host{name: "client", ns: fn.client}
	vip := netip.AddrPortFrom(foVIP, fwdPort)
	ec := client.dialEcho(t, vip)
	if ec.peer != foClient {
		t.Fatalf("%s saw the connection from %v, want the client %v", ec.backend, ec.peer, foClient)
	}
	must(t, ec.roundTrip("through A"))
	if n := clientConns(t, fn.a.node); n != 1 {
		t.Fatalf("node A has %d IPVS connections from the client, want 1", n)
	}
	if withSync {
		waitConns(t, fn.b.node, 1, time.Minute) // the master sends its buffer every 2 s or so
	} else if n := clientConns(t, fn.b.node); n != 0 {
		t.Fatalf("node B has %d IPVS connections from the client without sync, want 0", n)
	}

	// The VIP moves to B.
	sh(t, fn.lan, "ip route replace "+foVIP.String()+"/32 via "+foNodeB)
	err := ec.roundTrip("through B")
	switch {
	case withSync && err != nil:
		t.Fatalf("the connection to %s after the failover to B: %v", ec.backend, err)
	case !withSync && err == nil:
		t.Fatalf("without sync, the connection to %s carried on through B: the test cannot tell sync from none", ec.backend)
	case !withSync:
		t.Logf("without sync, the connection after the failover: %v", err)
	}
	if withSync {
		must(t, ec.roundTrip("through B again"))
	}

	// New connections: balanced by B over both backends; A sees none.
	before := clientConns(t, fn.b.node)
	seen := map[string]int{}
	for i := range 4 {
		nc := client.dialEcho(t, vip)
		must(t, nc.roundTrip(fmt.Sprintf("new %d", i)))
		seen[nc.backend]++
		nc.c.Close()
	}
	if seen["be1"] != 2 || seen["be2"] != 2 {
		t.Errorf("four new connections through B went to %v, want two to each backend", seen)
	}
	if n := clientConns(t, fn.b.node); n < before+4 {
		t.Errorf("node B has %d IPVS connections from the client, want at least %d", n, before+4)
	}
	if n := clientConns(t, fn.a.node); n != 1 {
		t.Errorf("node A has %d IPVS connections from the client, want still 1 (the first)", n)
	}

	must(t, ka.p.Cleanup(ctx))
	must(t, kb.p.Cleanup(ctx))
	if got := daemonsOn(t, fn.a.node); got != theirs {
		t.Errorf("node A's sync daemons after Cleanup:\n%s\nwant only the other program's:\n%s", got, theirs)
	}
	if got := daemonsOn(t, fn.b.node); got != "" {
		t.Errorf("node B's sync daemons after Cleanup:\n%s", got)
	}
	for _, tp := range []*topology{fn.a, fn.b} {
		s := tp.snapshot(t)
		checkLacks(t, s, "ipvsadm", foVIP.String())
		checkForeign(t, s)
	}
}

// waitConns polls node's IPVS connections from the client until there are
// at least n, for at most limit: the sync daemon sends on its own timer,
// with no event to wait on.
func waitConns(t *testing.T, node *testutil.NetNS, n int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		got := clientConns(t, node)
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node B has %d IPVS connections from the client after %v, want %d: the backup did not get the master's", got, limit, n)
		}
		<-tick.C
	}
}
