package netnstest_test

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/netnstest"
)

var (
	pfx = netip.MustParsePrefix
	ap  = netip.MustParseAddrPort
)

// A node with a client and a backend: TCP and UDP through the node, the
// backend sees the client's own address, a closed port is refused, and
// the test's own namespace has none of the links.
func TestNodeClientBackend(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node := netnstest.New(t)
	node.Sysctl(t, "net/ipv4/ip_forward", "1")
	client := node.Peer(t, "client", pfx("198.18.0.1/24"), pfx("198.18.0.2/24"))
	backend := node.Peer(t, "backend", pfx("198.18.1.1/24"), pfx("198.18.1.2/24"))
	tcp := backend.ServeTCP(t, ap("198.18.1.2:8080"), "backend-1")
	udp := backend.ServeUDP(t, ap("198.18.1.2:5353"), "backend-1/udp")

	if got, err := client.DialTCP(ctx, t, ap("198.18.1.2:8080")); err != nil || got != "backend-1" {
		t.Errorf("TCP through the node: %q, %v", got, err)
	}
	if got, err := client.DialUDP(ctx, t, ap("198.18.1.2:5353")); err != nil || got != "backend-1/udp" {
		t.Errorf("UDP through the node: %q, %v", got, err)
	}
	for _, s := range []*netnstest.Server{tcp, udp} {
		if p := s.Peers(); len(p) == 0 || p[0].Addr() != netip.MustParseAddr("198.18.0.2") {
			t.Errorf("the backend saw %v, want the client 198.18.0.2", p)
		}
	}
	if _, err := client.DialTCP(ctx, t, ap("198.18.1.2:8081")); err == nil {
		t.Error("a port nobody serves: no error")
	}
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelShort()
	if _, err := client.DialUDP(short, t, ap("198.18.1.3:5353")); err == nil {
		t.Error("UDP to an address nobody has: no error")
	}

	if out := node.Run(t, "ip", "-o", "addr", "show", "dev", "client"); !strings.Contains(out, "198.18.0.1/24") {
		t.Errorf("the node's end of the client's link: %q", out)
	}
	for _, name := range []string{"client", "backend"} {
		if _, err := net.InterfaceByName(name); err == nil {
			t.Errorf("the test's own namespace has a link %s", name)
		}
	}
}

// IPv6 over a veth pair, usable at once (no duplicate address detection),
// and a route of the caller's.
func TestIPv6Link(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := netnstest.New(t), netnstest.New(t)
	netnstest.Link(t, a, "a0", pfx("2001:db8::1/64"), b, "b0", pfx("2001:db8::2/64"))
	b.Run(t, "ip", "-6", "addr", "add", "2001:db8:1::2/128", "dev", "lo", "nodad")
	a.Route(t, pfx("2001:db8:1::/64"), netip.MustParseAddr("2001:db8::2"))
	b.ServeTCP(t, ap("[2001:db8:1::2]:80"), "b")
	if got, err := a.DialTCP(ctx, t, ap("[2001:db8:1::2]:80")); err != nil || got != "b" {
		t.Errorf("TCP over IPv6: %q, %v", got, err)
	}
	var inA bool
	a.Do(t, func() { _, err := net.InterfaceByName("a0"); inA = err == nil })
	if !inA {
		t.Error("Do did not run in the namespace")
	}
}
