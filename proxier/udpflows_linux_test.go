package proxier

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ipvskit/ipvskit/conntrack"
)

// TestIntegrationUDPFlows sends UDP from long-lived client sockets while
// the State changes under them, once per netfilter back end, with a
// Proxier that cleans up conntrack (Deps.Conntrack):
//
//   - EndpointRemoved: a socket to a cluster IP and one to a node port,
//     answered by backend-1, stay with it when backend-2 is added, and are
//     answered by backend-2 once backend-1 is removed.
//   - NoEndpointsToSome: sockets sending to a service without endpoints
//     (IPVS answers port unreachable) are answered once it has one.
//   - FlowBeforeFrontend: sockets that started sending before their
//     frontend existed (to a cluster IP the node routed elsewhere, IPv4 and
//     IPv6, and to a node port the node answered port unreachable for) hold
//     conntrack entries without NAT; once the service exists, the Proxier
//     deletes them and the same sockets are answered, the node port's
//     masqueraded. Without the cleanup these sockets are never answered
//     (seen by hand, with Deps.Conntrack nil): IPVS does not rewrite a
//     confirmed entry, and the backend's replies match no flow.
//
// On this kernel (6.1) the first two move without the Proxier's help: with
// net/ipv4/vs/expire_nodest_conn=1 the kernel expires a removed
// destination's IPVS connections from a work queue and, with
// net/ipv4/vs/conntrack=1, deletes their conntrack entries with them; and
// IPVS drops (port unreachable) what it cannot schedule, so a service
// without endpoints leaves no confirmed entry behind. The cleanup is what
// makes the third work.
func TestIntegrationUDPFlows(t *testing.T) {
	for _, v := range variants {
		be := v.be
		t.Run(v.String(), func(t *testing.T) {
			tp := newTopologyIn(t, v, 1, 2)
			k := tp.newProxier(t, Config{Backend: be, Families: []Family{IPv4, IPv6}})
			ct, err := conntrack.New(&conntrack.Config{NetNS: tp.node.Handle()})
			must(t, err)
			t.Cleanup(func() { ct.Close() })
			k.p.ct = ct // as Deps.Conntrack does; newProxier is shared with tests without it
			s := State{Node: Node{Addresses: []netip.Addr{tp.clients[0].nodeV4}}, Services: map[string]Service{}}
			t.Run("EndpointRemoved", func(t *testing.T) { testEndpointRemoved(t, tp, k, s) })
			t.Run("NoEndpointsToSome", func(t *testing.T) { testNoEndpointsToSome(t, tp, k, s) })
			t.Run("FlowBeforeFrontend", func(t *testing.T) { testFlowBeforeFrontend(t, tp, k, s) })
			if err := k.p.Cleanup(context.Background()); err != nil {
				t.Fatalf("cleanup: %v", err)
			}
		})
	}
}

// udpService is a service with a cluster IP and a node port, UDP 53 to the
// backends' 5353, with the given backends (by index) as IPv4 endpoints.
func (tp *topology) udpService(clusterIP string, nodePort int, backends ...int) Service {
	return Service{
		ClusterIPs: []netip.Addr{a(clusterIP)},
		Ports:      []Port{{Name: "dns", Protocol: UDP, Port: 53, TargetPort: backendUDPPort, NodePort: nodePort}},
		Endpoints:  tp.endpoints(true, false, backends),
	}
}

// dialUDP opens a UDP socket in h connected to addr, closed with t.
func (h *host) dialUDP(t *testing.T, addr netip.AddrPort) net.Conn {
	t.Helper()
	var (
		c   net.Conn
		err error
	)
	h.ns.Do(t, func() { c, err = net.Dial("udp", addr.String()) })
	must(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// ask sends one datagram on c and waits up to wait for the answer. An ICMP
// port unreachable for an earlier datagram shows up as a refused read.
func ask(c net.Conn, wait time.Duration) (reply, error) {
	if _, err := c.Write([]byte("who?")); err != nil {
		return reply{}, err
	}
	c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil {
		return reply{}, err
	}
	return parseReply(buf[:n])
}

// askUntil sends on c until it is answered by want (polling: the kernel may
// drop a datagram or two while it changes over), and fails t if the
// deadline passes first or another backend answers.
func askUntil(t *testing.T, what string, c net.Conn, want *host) reply {
	t.Helper()
	deadline := time.Now().Add(3 * requestTimeout)
	var errs []error
	for time.Now().Before(deadline) {
		r, err := ask(c, time.Second)
		switch {
		case err != nil:
			errs = append(errs, err)
		case r.name != want.name:
			t.Fatalf("%s: answered by %v, want %s", what, r, want.name)
		default:
			return r
		}
	}
	t.Fatalf("%s: no answer from %s by the deadline (%d tries; last errors %v)", what, want.name, len(errs), errors.Join(errs[max(0, len(errs)-2):]...))
	return reply{}
}

// unanswered sends n datagrams on c and fails t if any is answered.
func unanswered(t *testing.T, what string, c net.Conn, n int) {
	t.Helper()
	for range n {
		if r, err := ask(c, 500*time.Millisecond); err == nil {
			t.Fatalf("%s: answered by %v before there was anything to answer", what, r)
		}
	}
}

func testEndpointRemoved(t *testing.T, tp *topology, k *nodeKit, s State) {
	c1, b1, b2 := tp.clients[0], tp.backends[0], tp.backends[1]
	s.Services["moved"] = tp.udpService("198.18.100.11", 30011, 0)
	mustSync(t, k, s)
	cip := c1.dialUDP(t, ap("198.18.100.11:53"))
	np := c1.dialUDP(t, netip.AddrPortFrom(c1.nodeV4, 30011))
	askUntil(t, "cluster IP", cip, b1)
	askUntil(t, "node port", np, b1)

	// backend-2 joins: the flows stay where they are.
	s.Services["moved"] = tp.udpService("198.18.100.11", 30011, 0, 1)
	mustSync(t, k, s)
	for range 3 {
		askUntil(t, "cluster IP, backend-2 added", cip, b1)
		askUntil(t, "node port, backend-2 added", np, b1)
	}

	// backend-1 leaves: the same sockets move to backend-2.
	s.Services["moved"] = tp.udpService("198.18.100.11", 30011, 1)
	mustSync(t, k, s)
	askUntil(t, "cluster IP, backend-1 removed", cip, b2)
	askUntil(t, "node port, backend-1 removed", np, b2)
	for _, f := range tp.udpEntries(t) {
		if (f.dst == ap("198.18.100.11:53") || f.dst == netip.AddrPortFrom(c1.nodeV4, 30011)) && f.replySrc.Addr() != b2.v4 {
			t.Errorf("conntrack -L still has a flow to %v answered by %v", f.dst, f.replySrc)
		}
	}
}

func testNoEndpointsToSome(t *testing.T, tp *topology, k *nodeKit, s State) {
	c1, b1 := tp.clients[0], tp.backends[0]
	s.Services["empty"] = tp.udpService("198.18.100.12", 30012)
	mustSync(t, k, s)
	cip := c1.dialUDP(t, ap("198.18.100.12:53"))
	np := c1.dialUDP(t, netip.AddrPortFrom(c1.nodeV4, 30012))
	unanswered(t, "cluster IP without endpoints", cip, 2)
	unanswered(t, "node port without endpoints", np, 2)

	s.Services["empty"] = tp.udpService("198.18.100.12", 30012, 0)
	mustSync(t, k, s)
	askUntil(t, "cluster IP, endpoint added", cip, b1)
	r := askUntil(t, "node port, endpoint added", np, b1)
	if r.peer != b1.nodeV4 {
		t.Errorf("node port: backend-1 saw %v, want the node's masquerading address %v", r.peer, b1.nodeV4)
	}
}

func testFlowBeforeFrontend(t *testing.T, tp *topology, k *nodeKit, s State) {
	c1, b1, b2 := tp.clients[0], tp.backends[0], tp.backends[1]
	// From now on the node routes what it does not know to backend-2,
	// which does not forward: a datagram to a cluster IP nobody has bound
	// yet leaves the node (and its conntrack entry is confirmed, without
	// NAT). The last subtest: the route stays.
	tp.node.Do(t, func() {
		l, err := netlink.LinkByName("to-be2")
		for _, gw := range []netip.Addr{b2.v4, b2.v6} {
			if err == nil {
				err = netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: net.IP(gw.AsSlice())})
			}
		}
		must(t, err)
	})
	cip := c1.dialUDP(t, ap("198.18.100.13:53"))
	cip6 := c1.dialUDP(t, ap("[2001:db8:100::13]:53"))
	np := c1.dialUDP(t, netip.AddrPortFrom(c1.nodeV4, 30013))
	unanswered(t, "cluster IP before its service", cip, 2)
	unanswered(t, "IPv6 cluster IP before its service", cip6, 2)
	unanswered(t, "node port before its service", np, 2)
	before := map[netip.AddrPort]bool{}
	for _, f := range tp.udpEntries(t) {
		before[f.dst] = f.replySrc.Addr() == f.dst.Addr() // no NAT: the destination itself "answers"
	}
	for _, dst := range []netip.AddrPort{ap("198.18.100.13:53"), ap("[2001:db8:100::13]:53"), netip.AddrPortFrom(c1.nodeV4, 30013)} {
		if !before[dst] {
			t.Fatalf("no conntrack entry without NAT to %v before its service: %v", dst, before)
		}
	}

	svc := tp.udpService("198.18.100.13", 30013, 0)
	svc.ClusterIPs = append(svc.ClusterIPs, a("2001:db8:100::13"))
	svc.Endpoints = tp.endpoints(true, true, []int{0})
	s.Services["late"] = svc
	res := mustSync(t, k, s)
	if res.ConntrackDeleted != 3 {
		t.Errorf("the sync deleted %d conntrack entries, want the 3 made before the service", res.ConntrackDeleted)
	}
	if r := askUntil(t, "cluster IP, its service added", cip, b1); r.peer != c1.v4 {
		t.Errorf("cluster IP: backend-1 saw %v, want the client %v", r.peer, c1.v4)
	}
	if r := askUntil(t, "IPv6 cluster IP, its service added", cip6, b1); r.peer != c1.v6 {
		t.Errorf("IPv6 cluster IP: backend-1 saw %v, want the client %v", r.peer, c1.v6)
	}
	if r := askUntil(t, "node port, its service added", np, b1); r.peer != b1.nodeV4 {
		t.Errorf("node port: backend-1 saw %v, want the node's masquerading address %v", r.peer, b1.nodeV4)
	}
}

func mustSync(t *testing.T, k *nodeKit, s State) *Result {
	t.Helper()
	res, err := k.p.Sync(context.Background(), &s)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return res
}

// ctEntry is a UDP conntrack entry as conntrack -L shows it: the original
// destination and the reply source.
type ctEntry struct{ dst, replySrc netip.AddrPort }

// udpEntries lists the node's UDP conntrack entries with the conntrack tool.
func (tp *topology) udpEntries(t *testing.T) []ctEntry {
	t.Helper()
	var out []ctEntry
	for _, l := range strings.Split(tp.node.Exec(t, "conntrack", "-L", "-p", "udp", "-f", "ipv4")+
		tp.node.Exec(t, "conntrack", "-L", "-p", "udp", "-f", "ipv6"), "\n") {
		var dsts, srcs []string
		var dports, sports []string
		for _, kv := range strings.Fields(l) {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "dst":
				dsts = append(dsts, v)
			case "src":
				srcs = append(srcs, v)
			case "dport":
				dports = append(dports, v)
			case "sport":
				sports = append(sports, v)
			}
		}
		if len(dsts) < 2 || len(srcs) < 2 || len(dports) < 2 || len(sports) < 2 {
			continue
		}
		dport, err1 := strconv.ParseUint(dports[0], 10, 16)
		sport, err2 := strconv.ParseUint(sports[1], 10, 16)
		dst, err3 := netip.ParseAddr(dsts[0])
		src, err4 := netip.ParseAddr(srcs[1])
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			t.Fatalf("conntrack -L line %q: %v", l, err)
		}
		out = append(out, ctEntry{dst: netip.AddrPortFrom(dst, uint16(dport)), replySrc: netip.AddrPortFrom(src, uint16(sport))})
	}
	return out
}
