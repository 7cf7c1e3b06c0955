package conformance

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/proxier"
)

var (
	tcpPorts = []int{8080, 8081}
	udpPorts = []int{5353, 5354}
)

// echoPort is each backend's long-lived TCP service: every line a client
// sends comes back prefixed with the backend's name, for as long as the
// connection lasts.
const echoPort = 8082

// rig is one node namespace with its client and backends.
type rig struct {
	node, client *testutil.NetNS
	// allNodePorts serves node ports on every address of the node (no
	// --nodeport-addresses) instead of the client-facing ones.
	allNodePorts bool
	// exclude are the excluded CIDRs both proxiers are given (see
	// leftovers).
	exclude []string
}

// nodeAddrs are the addresses of the node's links that can carry node
// ports (proxier.NodePortCapable: IPv4 link-local included), but for the
// VIP link's.
func (r *rig) nodeAddrs(t *testing.T) []netip.Addr {
	t.Helper()
	var out []netip.Addr
	var err error
	r.node.Do(t, func() {
		var addrs []netlink.Addr
		if addrs, err = netlink.AddrList(nil, netlink.FAMILY_ALL); err != nil {
			return
		}
		vipLink := -1
		if l, lerr := netlink.LinkByName("kube-ipvs0"); lerr == nil {
			vipLink = l.Attrs().Index
		}
		for _, a := range addrs {
			ip, ok := netip.AddrFromSlice(a.IP)
			if ok && a.LinkIndex != vipLink && proxier.NodePortCapable(ip) {
				out = append(out, ip.Unmap())
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{node: testutil.NewNetNS(t), client: testutil.NewNetNS(t)}
	testutil.RequireIPVS(t, r.node)
	testutil.RequireDummy(t, r.node)
	// A dual-stack node forwards IPv6 (its CNI or kubelet set-up sees to
	// it); kube-proxy leaves that to the node, ipvskit sets it itself.
	var err error
	r.node.Do(t, func() { err = os.WriteFile("/proc/sys/net/ipv6/conf/all/forwarding", []byte("1"), 0) })
	if err != nil {
		t.Fatalf("IPv6 forwarding on the node: %v", err)
	}
	link(t, r.node, "to-client", r.client, []string{nodeAddr + "/24", nodeAddr6 + "/64", linkLocalNodeAddr + "/16"},
		[]string{clientAddr + "/24", clientAltAddr + "/24", clientAddr6 + "/64", linkLocalClientAddr + "/16"}, nodeAddr, nodeAddr6)
	for b := 1; b <= backends; b++ {
		ns := testutil.NewNetNS(t)
		link(t, r.node, fmt.Sprintf("to-b%d", b), ns,
			[]string{fmt.Sprintf("198.18.%d.1/24", 10+b), fmt.Sprintf("2001:db8:%d::1/64", 10+b)},
			[]string{backendAddr(b, false) + "/24", backendAddr(b, true) + "/64"},
			fmt.Sprintf("198.18.%d.1", 10+b), fmt.Sprintf("2001:db8:%d::1", 10+b))
		serve(t, ns, fmt.Sprintf("b%d", b))
	}
	return r
}

// link makes a veth pair from the node (nodeSide addresses) to ns (far
// addresses, default routes via gw4 and gw6), over netlink: in the
// emulated VM each exec of ip(8) costs seconds.
func link(t *testing.T, node *testutil.NetNS, name string, ns *testutil.NetNS, nodeSide, far []string, gw4, gw6 string) {
	t.Helper()
	var err error
	node.Do(t, func() {
		err = netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name},
			PeerName: "eth0", PeerNamespace: netlink.NsFd(int(ns.Handle()))})
		if err == nil {
			err = up(name, nodeSide)
		}
	})
	if err == nil {
		ns.Do(t, func() {
			if err = up("eth0", far); err != nil {
				return
			}
			l, _ := netlink.LinkByName("eth0")
			for _, gw := range []string{gw4, gw6} {
				if err = netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: net.ParseIP(gw)}); err != nil {
					return
				}
			}
		})
	}
	if err != nil {
		t.Fatalf("linking %s: %v", name, err)
	}
}

func up(name string, addrs []string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		p := netip.MustParsePrefix(a)
		ipn := &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
		if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: ipn, Flags: unix.IFA_F_NODAD}); err != nil {
			return fmt.Errorf("%s %s: %w", name, a, err)
		}
	}
	return netlink.LinkSetUp(l)
}

// serve answers every TCP connection and UDP datagram on the backend's
// ports with "name peer".
func serve(t *testing.T, ns *testutil.NetNS, name string) {
	t.Helper()
	var (
		tcp []net.Listener
		udp []net.PacketConn
		err error
	)
	ns.Do(t, func() {
		for _, p := range tcpPorts {
			var l net.Listener
			if l, err = net.Listen("tcp", fmt.Sprintf("[::]:%d", p)); err != nil {
				return
			}
			tcp = append(tcp, l)
		}
		for _, p := range udpPorts {
			var c net.PacketConn
			if c, err = net.ListenPacket("udp", fmt.Sprintf("[::]:%d", p)); err != nil {
				return
			}
			udp = append(udp, c)
		}
	})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	ns.Serve(t, "tcp", fmt.Sprintf("[::]:%d", echoPort), func(c net.Conn) {
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			fmt.Fprintf(c, "%s %s\n", name, sc.Text())
		}
	})
	for _, l := range tcp {
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				peer := c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
				fmt.Fprintf(c, "%s %s\n", name, peer)
				c.Close()
			}
		}()
	}
	for _, c := range udp {
		t.Cleanup(func() { c.Close() })
		go func() {
			buf := make([]byte, 64)
			for {
				_, from, err := c.ReadFrom(buf)
				if err != nil {
					return
				}
				peer := from.(*net.UDPAddr).AddrPort().Addr().Unmap()
				c.WriteTo(fmt.Appendf(nil, "%s %s\n", name, peer), from)
			}
		}()
	}
}

// exchange makes one request from the client (from src) to dst and returns
// the answer, or "refused" or "timeout".
func exchange(network string, src, dst netip.AddrPort, timeout time.Duration) string {
	d := net.Dialer{Timeout: timeout}
	if network == "tcp" {
		d.LocalAddr = net.TCPAddrFromAddrPort(src)
	} else {
		d.LocalAddr = net.UDPAddrFromAddrPort(src)
	}
	c, err := d.Dial(network, dst.String())
	if err != nil {
		return classify(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	var b []byte
	if network == "udp" {
		buf := make([]byte, 128)
		var n int
		if _, err = c.Write([]byte("?")); err == nil {
			n, err = c.Read(buf)
		}
		b = buf[:n]
	} else {
		b, err = io.ReadAll(io.LimitReader(c, 128))
	}
	if len(b) == 0 {
		return classify(err)
	}
	return strings.TrimSpace(string(b))
}

func classify(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, unix.ECONNREFUSED):
		return "refused"
	case errors.Is(err, unix.ENETUNREACH), errors.Is(err, unix.EHOSTUNREACH):
		return "unreachable"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case err == nil:
		return "empty"
	}
	return "error: " + err.Error()
}
