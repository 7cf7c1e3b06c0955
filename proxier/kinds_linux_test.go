package proxier

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TestIntegrationMoreKinds serves, to real traffic and under both netfilter
// back ends, what TestIntegrationProxier does not: SCTP, the internal
// traffic policy Local, kube-proxy's serving-and-terminating fallback, an
// IPv6 node port and an IPv6 load balancer with source ranges, and the two
// interface local-traffic detectors.
func TestIntegrationMoreKinds(t *testing.T) {
	for _, v := range variants {
		be := v.be
		t.Run(v.String(), func(t *testing.T) {
			tp := newTopologyIn(t, v, 2, 3)
			tp.addForeign(t)
			for _, h := range tp.backends {
				serveSCTP(t, h)
			}
			t.Run("Services", func(t *testing.T) { testMoreKinds(t, tp, be) })
			t.Run("InterfaceDetector", func(t *testing.T) {
				// Traffic coming in on to-be2 is local (not masqueraded):
				// backend-1 sees backend-2's own address.
				cfg := Config{Backend: be, LocalDetector: LocalDetector{Interface: "to-be2"}}
				testMasquerade(t, tp, cfg, tp.backends[1].v4)
			})
			t.Run("InterfacePrefixDetector", func(t *testing.T) {
				cfg := Config{Backend: be, LocalDetector: LocalDetector{InterfacePrefix: "to-be"}}
				testMasquerade(t, tp, cfg, tp.backends[1].v4)
			})
		})
	}
}

func testMoreKinds(t *testing.T, tp *topology, be Backend) {
	c1, c2 := tp.clients[0], tp.clients[1]
	b1, b2, b3 := tp.backends[0], tp.backends[1], tp.backends[2]
	k := tp.newProxier(t, Config{Backend: be, Families: []Family{IPv4, IPv6}})
	state := State{
		Node: Node{Addresses: []netip.Addr{c1.nodeV4, c1.nodeV6}},
		Services: map[string]Service{
			"sctp": {
				ClusterIPs: []netip.Addr{a("198.18.110.1")},
				Ports:      []Port{{Name: "s", Protocol: SCTP, Port: 9000, TargetPort: backendSCTPPort}},
				Endpoints:  tp.endpoints(true, false, []int{0, 1}),
			},
			"internal-local": {
				ClusterIPs:            []netip.Addr{a("198.18.110.2")},
				Ports:                 []Port{portHTTP},
				InternalTrafficPolicy: Local,
				Endpoints:             tp.endpoints(true, false, []int{0, 1}, 0), // only backend-1 is on this node
			},
			"terminating": {
				ClusterIPs: []netip.Addr{a("198.18.110.3")},
				Ports:      []Port{portHTTP},
				Endpoints: []Endpoint{
					{Addr: b1.v4, Serving: true, Terminating: true}, // the fallback: no endpoint is ready
					{Addr: b2.v4, Terminating: true},                // neither ready nor serving: never
					{Addr: b3.v4, Serving: true},                    // serving but not terminating, not ready: never
				},
			},
			"v6-nodeport-lb": {
				ClusterIPs:               []netip.Addr{a("2001:db8:110::4")},
				Ports:                    []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: backendTCPPort, NodePort: 30090}},
				LoadBalancerIPs:          []netip.Addr{a("2001:db8:113::1")},
				LoadBalancerSourceRanges: []netip.Prefix{pfx("2001:db8:20::/64")}, // client-1, not client-2
				Endpoints:                tp.endpoints(false, true, []int{0, 1}),
			},
		},
	}
	k.sync(t, state)

	t.Run("SCTPClusterIP", func(t *testing.T) {
		rs := c1.sctp(t, ap("198.18.110.1:9000"), 4)
		wantCounts(t, "SCTP to the cluster IP", rs, map[string]int{b1.name: 2, b2.name: 2})
		wantPeers(t, "SCTP to the cluster IP", rs, c1.v4)
	})
	t.Run("InternalTrafficPolicyLocal", func(t *testing.T) {
		rs := c1.tcp(t, ap("198.18.110.2:80"), 3)
		wantCounts(t, "cluster IP with internal policy Local", rs, map[string]int{b1.name: 3})
	})
	t.Run("ServingTerminatingFallback", func(t *testing.T) {
		rs := c1.tcp(t, ap("198.18.110.3:80"), 3)
		wantCounts(t, "no ready endpoint: the serving, terminating one", rs, map[string]int{b1.name: 3})
		// Once an endpoint is ready, the terminating one is no longer used.
		svc := state.Services["terminating"]
		svc.Endpoints = append(svc.Endpoints[:len(svc.Endpoints):len(svc.Endpoints)], Endpoint{Addr: b3.v4, Ready: true, Serving: true})
		svc.Endpoints = append(svc.Endpoints[:2:2], svc.Endpoints[3])
		state.Services["terminating"] = svc
		k.sync(t, state)
		rs = c1.tcp(t, ap("198.18.110.3:80"), 3)
		wantCounts(t, "a ready endpoint wins over the fallback", rs, map[string]int{b3.name: 3})
	})
	t.Run("IPv6NodePort", func(t *testing.T) {
		rs := c1.tcp(t, netip.AddrPortFrom(c1.nodeV6, 30090), 4)
		wantCounts(t, "TCP to the IPv6 node port", rs, map[string]int{b1.name: 2, b2.name: 2})
		wantPeers(t, "TCP to the IPv6 node port", rs, b1.nodeV6, b2.nodeV6)
	})
	t.Run("IPv6LoadBalancerSourceRanges", func(t *testing.T) {
		vip := ap("[2001:db8:113::1]:80")
		rs := c1.tcp(t, vip, 2)
		wantCounts(t, "client-1 (admitted) to the IPv6 load balancer", rs, map[string]int{b1.name: 1, b2.name: 1})
		if r, err := c2.tcpOnce(t, vip, 3*time.Second); err == nil {
			t.Errorf("client-2 (outside the source ranges) got an answer: %v", r)
		} else if !isTimeout(err) {
			t.Errorf("client-2's connection was not dropped but: %v", err)
		}
	})
	k.cleanup(t, tp)
}

// backendSCTPPort is where every backend that serveSCTP ran on answers SCTP.
const backendSCTPPort = 9090

// serveSCTP answers each SCTP association to backendSCTPPort (IPv4) with the
// host's name and the peer's address, then closes it. Go's net package has
// no SCTP, so this is the socket API itself.
func serveSCTP(t *testing.T, h *host) {
	t.Helper()
	var (
		fd  int
		err error
	)
	h.ns.Do(t, func() { fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_SCTP) })
	if err != nil {
		t.Fatalf("SCTP socket (module sctp): %v", err)
	}
	if err = unix.Bind(fd, &unix.SockaddrInet4{Port: backendSCTPPort}); err == nil {
		err = unix.Listen(fd, 16)
	}
	if err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Shutdown(fd, unix.SHUT_RDWR); unix.Close(fd) })
	go func() {
		for {
			c, sa, err := unix.Accept(fd)
			if err != nil {
				return
			}
			if in4, ok := sa.(*unix.SockaddrInet4); ok {
				unix.Write(c, fmt.Appendf(nil, "%s %s\n", h.name, netip.AddrFrom4(in4.Addr)))
			}
			unix.Close(c)
		}
	}()
}

// sctp opens n SCTP associations from h to addr, one after another, and
// returns the replies; one that fails fails the test.
func (h *host) sctp(t *testing.T, addr netip.AddrPort, n int) []reply {
	t.Helper()
	var out []reply
	for i := range n {
		r, err := h.sctpOnce(t, addr)
		if err != nil {
			t.Fatalf("%s: SCTP association %d to %v: %v", h.name, i+1, addr, err)
		}
		out = append(out, r)
	}
	return out
}

func (h *host) sctpOnce(t *testing.T, addr netip.AddrPort) (reply, error) {
	t.Helper()
	var (
		fd  int
		err error
	)
	h.ns.Do(t, func() {
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.IPPROTO_SCTP)
	})
	if err != nil {
		return reply{}, err
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(requestTimeout)
	wait := func(events int16) error {
		for {
			ms := int(time.Until(deadline) / time.Millisecond)
			if ms <= 0 {
				return fmt.Errorf("timed out after %v", requestTimeout)
			}
			pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
			n, err := unix.Poll(pfd, ms)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n == 1 {
				return err
			}
		}
	}
	err = unix.Connect(fd, &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()})
	if err == unix.EINPROGRESS {
		if err = wait(unix.POLLOUT); err == nil {
			var soErr int
			if soErr, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); err == nil && soErr != 0 {
				err = unix.Errno(soErr)
			}
		}
	}
	if err != nil {
		return reply{}, fmt.Errorf("connect: %w", err)
	}
	var got []byte
	buf := make([]byte, 256)
	for {
		if err := wait(unix.POLLIN); err != nil {
			return reply{}, fmt.Errorf("read: %w (got %q)", err, got)
		}
		n, err := unix.Read(fd, buf)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if err != nil {
			return reply{}, fmt.Errorf("read: %w", err)
		}
		if n == 0 {
			return parseReply(got)
		}
		got = append(got, buf[:n]...)
	}
}

// TestIntegrationStrictARP checks what Config.StrictARP is for: a client on
// the node's link that resolves a VIP with ARP (a route to the VIP straight
// on its link, as a flat L2 network has) gets an answer from the node
// without it, and none with it, so the VIPs held on the dummy link do not
// leak onto the node's other links.
//
// It holds in both VIP modes: the kernel answers ARP for a target whose
// route is of type local (net/ipv4/arp.c, arp_process), an address or a
// local route alike, and arp_ignore=1 asks for the target to be an address
// of the link the request came in on, which a VIP is in neither mode.
func TestIntegrationStrictARP(t *testing.T) {
	for _, mode := range []VIPMode{VIPAddresses, VIPLocalRoutes} {
		t.Run(mode.String(), func(t *testing.T) { testStrictARP(t, mode) })
	}
}

func testStrictARP(t *testing.T, mode VIPMode) {
	tp := newTopology(t, 1, 1)
	tp.mode = mode
	tp.addForeign(t)
	c := tp.clients[0]
	onLink := func(vip netip.Addr) {
		t.Helper()
		var err error
		c.ns.Do(t, func() {
			var l netlink.Link
			if l, err = netlink.LinkByName("eth0"); err == nil {
				err = netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Scope: netlink.SCOPE_LINK,
					Dst: &net.IPNet{IP: net.IP(vip.AsSlice()), Mask: net.CIDRMask(32, 32)}})
			}
		})
		must(t, err)
	}
	svc := func(vip netip.Addr) State {
		return State{Services: map[string]Service{"web": {
			ClusterIPs: []netip.Addr{vip}, Ports: []Port{portHTTP}, Endpoints: tp.endpoints(true, false, []int{0}),
		}}}
	}

	loose, strict := a("198.18.120.1"), a("198.18.120.2")
	onLink(loose)
	onLink(strict)
	k := tp.newProxier(t, Config{})
	k.sync(t, svc(loose))
	wantCounts(t, "ARP-resolved VIP without strict ARP", c.tcp(t, netip.AddrPortFrom(loose, 80), 1), map[string]int{tp.backends[0].name: 1})
	must(t, k.p.Cleanup(context.Background()))

	k = tp.newProxier(t, Config{StrictARP: true})
	k.sync(t, svc(strict))
	if r, err := c.tcpOnce(t, netip.AddrPortFrom(strict, 80), 5*time.Second); err == nil {
		t.Errorf("with strict ARP the node answered ARP for a VIP on its dummy link: %v", r)
	}
	// Routed through the node (the client's default route), the VIP works.
	c.ns.Do(t, func() {
		l, err := netlink.LinkByName("eth0")
		if err == nil {
			err = netlink.RouteDel(&netlink.Route{LinkIndex: l.Attrs().Index, Scope: netlink.SCOPE_LINK,
				Dst: &net.IPNet{IP: net.IP(strict.AsSlice()), Mask: net.CIDRMask(32, 32)}})
		}
		must(t, err)
	})
	wantCounts(t, "routed VIP with strict ARP", c.tcp(t, netip.AddrPortFrom(strict, 80), 1), map[string]int{tp.backends[0].name: 1})
	must(t, k.p.Cleanup(context.Background()))
}
