package proxier

import (
	"context"
	"errors"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestIntegrationFamiliesAndNodeAddresses serves, under each back end and
// VIP mode, issue 21's cases to real traffic beside another program's
// objects: an IPv6-only service's node port (IPFamilies) exists and answers
// on the node's IPv6 address only; a node port answers on an IPv4
// link-local node address (169.254.0.0/16, only inside the VM's
// namespaces); a health-check port is in the sets of both families of a
// load balancer without node ports, also when the node has no addresses;
// and a health-check port with the Cluster policy is refused without
// touching the kernel.
func TestIntegrationFamiliesAndNodeAddresses(t *testing.T) {
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) { testFamiliesAndNodeAddresses(t, v) })
	}
}

// linkLocalNode and linkLocalClient are the node's and client-1's
// link-local addresses on the link between them.
var (
	linkLocalNode   = netip.MustParsePrefix("169.254.20.1/16")
	linkLocalClient = netip.MustParsePrefix("169.254.20.2/16")
)

func testFamiliesAndNodeAddresses(t *testing.T, v variant) {
	tp := newTopologyIn(t, v, 1, 1)
	tp.addForeign(t)
	c, b := tp.clients[0], tp.backends[0]
	var err error
	tp.node.Do(t, func() { err = linkUp("to-c1", linkLocalNode) })
	must(t, err)
	c.ns.Do(t, func() { err = linkUp("eth0", linkLocalClient) })
	must(t, err)

	k := tp.newProxier(t, Config{Backend: v.be, Families: []Family{IPv4, IPv6}})
	s := State{
		Node: Node{Addresses: []netip.Addr{c.nodeV4, c.nodeV6, linkLocalNode.Addr()}},
		Services: map[string]Service{
			"v6only": {IPFamilies: []Family{IPv6}, Ports: []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: backendTCPPort, NodePort: 30080}},
				Endpoints: tp.endpoints(true, true, []int{0})},
			"v4": {ClusterIPs: []netip.Addr{a("198.18.100.1")}, Ports: []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: backendTCPPort, NodePort: 30081}},
				Endpoints: tp.endpoints(true, false, []int{0})},
			"lb": {ClusterIPs: []netip.Addr{a("198.18.100.2"), a("2001:db8:100::2")}, LoadBalancerIPs: []netip.Addr{a("198.18.103.1")},
				Ports: []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: backendTCPPort}}, ExternalTrafficPolicy: Local,
				HealthCheckNodePort: 30500, Endpoints: tp.endpoints(true, true, []int{0}, 0)},
		},
	}
	k.sync(t, s)

	snap := tp.snapshot(t)
	lines := snap.ipvsLines()
	for l, want := range map[string]bool{
		"-A -t [" + c.nodeV6.String() + "]:30080 -s rr": true,
		"-A -t " + c.nodeV4.String() + ":30080 -s rr":   false, // issue 21, item 1
		"-A -t 169.254.20.1:30081 -s rr":                true,  // item 5
		"-A -t 169.254.20.1:30080 -s rr":                false,
	} {
		if slices.Contains(lines, l) != want {
			t.Errorf("ipvsadm -Sn has %q: %v, want %v:\n%s", l, !want, want, snap["ipvsadm"])
		}
	}
	wantAnswers(t, c, netip.AddrPortFrom(c.nodeV6, 30080), b)
	wantAnswers(t, c, netip.AddrPortFrom(linkLocalNode.Addr(), 30081), b)
	if r, err := c.tcpOnce(t, netip.AddrPortFrom(c.nodeV4, 30080), 2*time.Second); err == nil {
		t.Errorf("an IPv6-only service's node port answered over IPv4: %v", r)
	}
	if n := healthCheckSets(snap, v.be, 30500); n != 2 { // item 3
		t.Errorf("the health-check port is in %d sets, want 2 (one per family)", n)
	}

	// Item 3: a node without addresses keeps the health-check port open.
	s.Node = Node{}
	k.sync(t, s)
	if n := healthCheckSets(tp.snapshot(t), v.be, 30500); n != 2 {
		t.Errorf("on a node without addresses the health-check port is in %d sets, want 2", n)
	}

	// Item 2: refused with the Cluster policy, and nothing changes.
	before := tp.snapshot(t)
	bad := s.Services["lb"]
	bad.ExternalTrafficPolicy = Cluster
	s.Services["lb"] = bad
	var ve *ValidationError
	if _, err := k.p.Sync(context.Background(), &s); !errors.As(err, &ve) {
		t.Errorf("a health-check port with the Cluster policy: %v, want a *ValidationError", err)
	}
	nft := func(s snapshot) string { return nftCounters.ReplaceAllString(s["nft"], "") }
	if after := tp.snapshot(t); !slices.Equal(after.ipvsLines(), before.ipvsLines()) || nft(after) != nft(before) || after["ipset"] != before["ipset"] {
		t.Error("a refused State changed the kernel")
	}
	checkForeign(t, tp.snapshot(t))
	k.cleanup(t, tp)
}

// wantAnswers fails t unless a connection from c to addr is answered by
// backend b.
func wantAnswers(t *testing.T, c *host, addr netip.AddrPort, b *host) {
	t.Helper()
	if rs := c.tcp(t, addr, 1); rs[0].name != b.name {
		t.Errorf("%v answered by %v, want %s", addr, rs[0], b.name)
	}
}

var nftCounters = regexp.MustCompile(`packets \d+ bytes \d+`)

var nftHealthCheckSet = regexp.MustCompile(`(?s)set health-check-node-port \{[^}]*\}[^}]*\}`)

// healthCheckSets counts the health-check sets (one per family) that hold
// port in s, as ipset save or nft list ruleset prints them.
func healthCheckSets(s snapshot, be Backend, port int) int {
	n := 0
	if be == NFTables {
		for _, m := range nftHealthCheckSet.FindAllString(s["nft"], -1) {
			if regexp.MustCompile(`elements = \{[^}]*\b` + itoa(port) + `\b`).MatchString(m) {
				n++
			}
		}
		return n
	}
	for _, l := range strings.Split(s["ipset"], "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "add" && strings.Contains(f[1], "HEALTH-CHECK") && f[2] == itoa(port) {
			n++
		}
	}
	return n
}
