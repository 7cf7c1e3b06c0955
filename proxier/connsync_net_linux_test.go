package proxier

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
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

// clientConns counts the IPVS connections from the client in node's table.
func clientConns(t *testing.T, node *testutil.NetNS) int {
	t.Helper()
	n := 0
	for _, c := range connsFrom(t, node) {
		if c.Addr() == foClient {
			n++
		}
	}
	return n
}

// hasConn says node's IPVS table has the connection of ec.
func hasConn(t *testing.T, node *testutil.NetNS, ec *echoConn) bool {
	t.Helper()
	return slices.Contains(connsFrom(t, node), ec.c.LocalAddr().(*net.TCPAddr).AddrPort())
}

// connsFrom lists the client side of each IPv4 connection in node's IPVS
// table (/proc/net/ip_vs_conn, which is current; the counters are summed
// every 2 s).
func connsFrom(t *testing.T, node *testutil.NetNS) []netip.AddrPort {
	t.Helper()
	var (
		b   []byte
		err error
	)
	node.Do(t, func() { b, err = os.ReadFile("/proc/thread-self/net/ip_vs_conn") })
	must(t, err)
	var out []netip.AddrPort
	for _, l := range strings.Split(string(b), "\n")[1:] {
		// Pro FromIP FPrt ToIP TPrt DestIP DPrt State Expires ...
		f := strings.Fields(l)
		if len(f) < 3 || len(f[1]) != 8 {
			continue
		}
		ip, err1 := strconv.ParseUint(f[1], 16, 32)
		port, err2 := strconv.ParseUint(f[2], 16, 16)
		if err1 != nil || err2 != nil {
			t.Fatalf("ip_vs_conn line %q", l)
		}
		out = append(out, netip.AddrPortFrom(netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), uint16(port)))
	}
	return out
}

// daemonsOn is ipvsadm's list of the sync daemons in ns.
func daemonsOn(t *testing.T, ns *testutil.NetNS) string {
	t.Helper()
	return strings.TrimSpace(ns.Exec(t, "ipvsadm", "-Ln", "--daemon"))
}

// waitConn polls node's IPVS connections until it has the one of ec, for
// at most limit: the sync daemon sends on its own timer, with no event to
// wait on.
func waitConn(t *testing.T, node *testutil.NetNS, name string, ec *echoConn, limit time.Duration) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(limit)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for !hasConn(t, node, ec) {
		if time.Now().After(deadline) {
			t.Fatalf("node %s lacks the IPVS connection from %v after %v: the sync daemon did not carry it", name, ec.c.LocalAddr(), limit)
		}
		<-tick.C
	}
	t.Logf("node %s had the connection from %v after %v", name, ec.c.LocalAddr(), time.Since(start).Round(time.Millisecond))
}
