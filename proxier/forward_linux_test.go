package proxier

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/ipvs"
)

// forwardNet is the topology of the forwarding-method tests: a router
// between the client and everything else, the node and a direct-routing
// backend on one L2 segment (a bridge in the router's namespace), and the
// tunnel backends each on a subnet of their own behind the router, so
// that a reply can reach the client without the node:
//
//	client 198.18.150.2 -- .1 router (routes 198.18.160.0/24, the VIPs, to the node)
//	router br0 198.18.151.1 -- node 198.18.151.10, dr backend 198.18.151.20
//	router .152.1 -- ipip backend 198.18.152.2
//	router .153.1 -- gue backend 198.18.153.2
//
// Each backend holds its service's VIP on lo and greets each connection
// with its name and the peer address it saw, then echoes (serveEcho).
type forwardNet struct {
	tp                   *topology // the node, for the Proxier and the snapshot helpers
	router, client       *testutil.NetNS
	dr, ipip, gue        *testutil.NetNS
	clientAddr           netip.Addr
	drVIP, ipipVIP, gVIP netip.Addr
}

const (
	forwardVIPs = "198.18.160.0/24"
	guePort     = 6080
	fwdPort     = 80
)

func newForwardNet(t *testing.T) *forwardNet {
	t.Helper()
	tp := newTopology(t, 0, 0)
	fn := &forwardNet{
		tp: tp, router: testutil.NewNetNS(t), client: testutil.NewNetNS(t),
		dr: testutil.NewNetNS(t), ipip: testutil.NewNetNS(t), gue: testutil.NewNetNS(t),
		clientAddr: a("198.18.150.2"),
		drVIP:      a("198.18.160.1"), ipipVIP: a("198.18.160.2"), gVIP: a("198.18.160.3"),
	}
	// The router forwards, and drops no reply for coming in on another
	// link than the one its source (a VIP) is routed out of.
	fn.sh(t, fn.router, "sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0\n"+
		"ip link add br0 type bridge\nip addr add 198.18.151.1/24 dev br0\nip link set br0 up\n")
	veth(t, fn.router, "c0", fn.client, "eth0")
	veth(t, fn.router, "n0", tp.node, "eth0")
	veth(t, fn.router, "d0", fn.dr, "eth0")
	veth(t, fn.router, "t0", fn.ipip, "eth0")
	veth(t, fn.router, "g0", fn.gue, "eth0")
	fn.sh(t, fn.router, "ip addr add 198.18.150.1/24 dev c0\nip addr add 198.18.152.1/24 dev t0\nip addr add 198.18.153.1/24 dev g0\n"+
		"ip link set n0 master br0\nip link set d0 master br0\n"+
		"for l in c0 n0 d0 t0 g0; do ip link set $l up; done\n"+
		"ip route add "+forwardVIPs+" via 198.18.151.10\n")
	fn.sh(t, fn.client, up("198.18.150.2/24", "198.18.150.1"))
	fn.sh(t, tp.node, up("198.18.151.10/24", "198.18.151.1"))
	// Direct routing: the VIP on lo, never announced or answered for.
	fn.sh(t, fn.dr, up("198.18.151.20/24", "198.18.151.1")+
		"sysctl -qw net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2 net.ipv4.conf.eth0.arp_ignore=1 net.ipv4.conf.eth0.arp_announce=2\n"+
		"ip addr add "+fn.drVIP.String()+"/32 dev lo\n")
	// Tunnels: the VIP on lo, the ipip fallback device up to decapsulate,
	// no reverse-path filter on it (the client is not routed out of it);
	// GUE arrives at a fou port of type gue and goes on to the ipip device.
	tunnel := "ip link set tunl0 up\nsysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.tunl0.rp_filter=0\n"
	fn.sh(t, fn.ipip, up("198.18.152.2/24", "198.18.152.1")+tunnel+"ip addr add "+fn.ipipVIP.String()+"/32 dev lo\n")
	fn.sh(t, fn.gue, up("198.18.153.2/24", "198.18.153.1")+tunnel+"ip addr add "+fn.gVIP.String()+"/32 dev lo\n"+
		"ip fou add port "+strconv.Itoa(guePort)+" gue\n")
	for name, ns := range map[string]*testutil.NetNS{"dr": fn.dr, "ipip": fn.ipip, "gue": fn.gue} {
		serveEcho(t, &host{name: name, ns: ns}, fwdPort)
	}
	// A counter in the node of what comes from the VIPs (replies, if they
	// passed the node) and of what goes to them (the requests).
	fn.sh(t, tp.node, "nft -f - <<'EOF'\ntable ip fwdprobe {\n\tchain pre {\n\t\ttype filter hook prerouting priority -400;\n"+
		"\t\tip saddr "+forwardVIPs+" counter\n\t\tip daddr "+forwardVIPs+" counter\n\t}\n}\nEOF\n")
	return fn
}

// up is the script that gives eth0 addr, sets it up and routes by gw.
func up(addr, gw string) string {
	return "ip addr add " + addr + " dev eth0\nip link set eth0 up\nip route add default via " + gw + "\n"
}

// sh runs script in ns with one exec (each costs seconds in the VM).
func (fn *forwardNet) sh(t *testing.T, ns *testutil.NetNS, script string) {
	t.Helper()
	ns.Exec(t, "sh", "-c", "PATH=/usr/sbin:/sbin:/usr/bin:/bin\nset -e\n"+script)
}

// veth links aName in a with bName in b, over netlink.
func veth(t *testing.T, a *testutil.NetNS, aName string, b *testutil.NetNS, bName string) {
	t.Helper()
	var err error
	a.Do(t, func() {
		err = netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: aName}, PeerName: bName,
			PeerNamespace: netlink.NsFd(int(b.Handle()))})
	})
	if err != nil {
		t.Fatalf("veth %s-%s: %v", aName, bName, err)
	}
}

// exchange connects from the client to vip, reads the backend's greeting
// (its name and the client address it saw) and has a line echoed: a
// connection that carries data both ways.
func (fn *forwardNet) exchange(t *testing.T, vip netip.Addr, i int) (backend string, peer netip.Addr) {
	t.Helper()
	client := &host{name: "client", ns: fn.client}
	ec := client.dialEcho(t, netip.AddrPortFrom(vip, fwdPort))
	defer ec.c.Close()
	if err := ec.roundTrip(fmt.Sprintf("request %d", i)); err != nil {
		t.Fatalf("connection %d to %v: %v", i, vip, err)
	}
	return ec.backend, ec.peer
}

// probeCounts are the node's counts of packets from the VIPs and to them.
var probeCount = regexp.MustCompile(`ip (saddr|daddr) ` + regexp.QuoteMeta(forwardVIPs) + ` counter packets (\d+)`)

func (fn *forwardNet) probe(t *testing.T) (fromVIPs, toVIPs int) {
	t.Helper()
	out := fn.tp.node.Exec(t, "nft", "list", "table", "ip", "fwdprobe")
	for _, m := range probeCount.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[2])
		if m[1] == "saddr" {
			fromVIPs = n
		} else {
			toVIPs = n
		}
	}
	return fromVIPs, toVIPs
}

// forwardState serves each VIP by one method, one endpoint each: direct
// routing on a load-balancer IP whose source ranges admit the client,
// ipip on an external IP, GUE on a cluster IP; and a masquerade service
// whose node port is the others' port, 80. The node-port rule marks any
// local address at a node port's number, VIPs included, unless they are
// accepted before it: a direct-routed request marked so would be
// masqueraded, and reach its backend from the node's address.
func (fn *forwardNet) forwardState() State {
	port := []Port{{Name: "http", Protocol: TCP, Port: fwdPort}}
	ep := func(addr string) []Endpoint { return []Endpoint{{Addr: a(addr), Ready: true, Serving: true}} }
	return State{
		Node: Node{Addresses: []netip.Addr{a("198.18.151.10")}},
		Services: map[string]Service{
			"dr": {LoadBalancerIPs: []netip.Addr{fn.drVIP}, LoadBalancerSourceRanges: []netip.Prefix{pfx("198.18.150.0/24")},
				Ports: port, Forward: ipvs.DirectRoute, Endpoints: ep("198.18.151.20")},
			"ipip": {ExternalIPs: []netip.Addr{fn.ipipVIP}, Ports: port, Forward: ipvs.Tunnel,
				Endpoints: ep("198.18.152.2")},
			"gue": {ClusterIPs: []netip.Addr{fn.gVIP}, Ports: port, Forward: ipvs.Tunnel, Tunnel: Tunnel{Type: ipvs.GUE, Port: guePort},
				Endpoints: ep("198.18.153.2")},
			"np": {ClusterIPs: []netip.Addr{a("198.18.161.1")}, Ports: []Port{{Name: "http", Protocol: TCP, Port: 8080, NodePort: fwdPort}},
				Endpoints: ep("198.18.151.20")},
		},
	}
}

// TestIntegrationForward sends real traffic through a direct-routing, an
// ipip and a GUE service, under each netfilter back end, beside another
// program's virtual server, nft table, ipset, chain and link: each backend
// sees the client's own address, the connection carries a line each way,
// no reply passes the node (its prerouting counter of packets from the
// VIPs stays at 0 while the one of packets to them counts the requests),
// and the IPVS table says each method as ipvsadm writes it. A method
// changed with ipvsadm is repaired by Reconcile, a restarted Proxier
// sends IPVS nothing, and the neighbour's objects are untouched through
// Sync and Cleanup.
func TestIntegrationForward(t *testing.T) {
	for _, v := range variants { // each back end, and each VIP mode
		t.Run(v.String(), func(t *testing.T) { testForward(t, v) })
	}
}

func testForward(t *testing.T, v variant) {
	ctx := context.Background()
	fn := newForwardNet(t)
	fn.tp.mode = v.mode
	fn.tp.addForeign(t)
	k := fn.tp.newProxier(t, Config{Backend: v.be})
	k.sync(t, fn.forwardState())
	s := fn.tp.snapshot(t)
	checkForeign(t, s)
	checkContains(t, s, "ipvsadm",
		"-a -t 198.18.160.1:80 -r 198.18.151.20:80 -g -w 1",
		"-a -t 198.18.160.2:80 -r 198.18.152.2:80 -i -w 1 --tun-type ipip",
		fmt.Sprintf("-a -t 198.18.160.3:80 -r 198.18.153.2:80 -i -w 1 --tun-type gue --tun-port %d", guePort))

	n := 0
	for _, c := range []struct {
		name string
		vip  netip.Addr
	}{{"dr", fn.drVIP}, {"ipip", fn.ipipVIP}, {"gue", fn.gVIP}} {
		for range 3 {
			n++
			backend, peer := fn.exchange(t, c.vip, n)
			if backend != c.name || peer != fn.clientAddr {
				t.Errorf("%v answered by %s, which saw the connection from %v; want %s and the client, %v", c.vip, backend, peer, c.name, fn.clientAddr)
			}
		}
	}
	if conns := fn.tp.ipvsConns(t); !conns[fn.clientAddr] {
		t.Errorf("the node's IPVS connections have no %v: %v", fn.clientAddr, conns)
	}
	from, to := fn.probe(t)
	if from != 0 || to < n {
		t.Errorf("the node saw %d packets from the VIPs (want 0: replies go straight to the client) and %d to them (want at least %d)", from, to, n)
	}

	// The method changed behind the Proxier's back is drift, repaired in
	// place; a restarted Proxier's first Sync sends IPVS nothing.
	fn.sh(t, fn.tp.node, "ipvsadm -e -t 198.18.160.1:80 -r 198.18.151.20:80 -m -w 1\n")
	rep, err := k.p.Reconcile(ctx)
	must(t, err)
	wantReport(t, rep, "ipvs: destination tcp 198.18.160.1:80 -> 198.18.151.20:80: forwarding masq, want route")
	if backend, peer := fn.exchange(t, fn.drVIP, n+1); backend != "dr" || peer != fn.clientAddr {
		t.Errorf("after the repair, %v answered by %s, which saw %v", fn.drVIP, backend, peer)
	}
	k2 := fn.tp.newProxier(t, Config{Backend: v.be})
	if res := k2.sync(t, fn.forwardState()); res.Plan.IPVSAdd.Len()+res.Plan.IPVSDelete.Len() != 0 {
		t.Errorf("a restart's first Sync:\n%s", res.Plan)
	}

	must(t, k2.p.Cleanup(ctx))
	s = fn.tp.snapshot(t)
	checkLacks(t, s, "ipvsadm", "198.18.160.")
	checkForeign(t, s)
}
