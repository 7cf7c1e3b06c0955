package proxier

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/internal/names"
	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/sysctl"
)

// topology is a node namespace (IPVS, the VIP link, the netfilter rules)
// with client and backend namespaces routed through it, each over its own
// veth pair, dual stack:
//
//	client-N  198.18.2(N-1).2  2001:db8:2(N-1)::2  --  node 198.18.2(N-1).1  2001:db8:2(N-1)::1
//	backend-N 198.18.1N.2      2001:db8:1N::2      --  node 198.18.1N.1      2001:db8:1N::1
//
// Every backend serves TCP on port 8080 and UDP on port 5353, both
// families, and answers each request with its name and the peer address it
// saw. The links are made over netlink rather than with ip(8): in the
// emulated VM every exec of a program costs seconds.
type topology struct {
	node     *testutil.NetNS
	clients  []*host
	backends []*host
	// mode, if not VIPAddresses, is the VIPMode of every Proxier
	// newProxier makes: the kernel tests run in each mode over the same
	// code (see variants). A test that mixes modes leaves it zero and
	// sets Config.VIPMode.
	mode VIPMode
}

// variant is one way to run a kernel test: a netfilter back end and a VIP
// mode.
type variant struct {
	be   Backend
	mode VIPMode
}

// String is the subtest's name: the back end, with "-routes" for
// VIPLocalRoutes (the address mode keeps the names the tests had before).
func (v variant) String() string {
	if v.mode == VIPLocalRoutes {
		return v.be.String() + "-routes"
	}
	return v.be.String()
}

// allVariants are both back ends in both VIP modes: TestIntegrationProxier,
// the traffic test of every kind of frontend, runs in each.
var allVariants = []variant{{NFTables, VIPAddresses}, {IPTables, VIPAddresses}, {NFTables, VIPLocalRoutes}, {IPTables, VIPLocalRoutes}}

// variants are each back end and each VIP mode once, for the other kernel
// tests. The two act on separate subsystems (the netfilter rules; how the
// VIP link holds the VIPs), so what a test checks of one does not depend on
// the other's choice: each value once covers it, at half the time of every
// pair. The pairs meet in TestIntegrationProxier (allVariants), and the
// back ends' rules are checked against nft and iptables-save for both
// families on the host's kernel (package iptables).
var variants = []variant{{NFTables, VIPAddresses}, {IPTables, VIPLocalRoutes}}

// newTopologyIn is newTopology for the Proxiers of variant v.
func newTopologyIn(t *testing.T, v variant, nClients, nBackends int) *topology {
	t.Helper()
	tp := newTopology(t, nClients, nBackends)
	tp.mode = v.mode
	return tp
}

// host is a client or backend namespace, with its addresses and the node's
// addresses on the link to it.
type host struct {
	name           string
	ns             *testutil.NetNS
	v4, v6         netip.Addr
	nodeV4, nodeV6 netip.Addr // the node's side of the link
}

const (
	backendTCPPort = 8080
	backendUDPPort = 5353
)

func newTopology(t *testing.T, nClients, nBackends int) *topology {
	t.Helper()
	node := testutil.NewNetNS(t)
	testutil.RequireIPVS(t, node)
	testutil.RequireDummy(t, node)
	tp := &topology{node: node}
	for i := range nClients {
		h := tp.attach(t, fmt.Sprintf("client-%d", i+1), fmt.Sprintf("to-c%d", i+1), 20+i)
		tp.clients = append(tp.clients, h)
	}
	for i := range nBackends {
		h := tp.attach(t, fmt.Sprintf("backend-%d", i+1), fmt.Sprintf("to-be%d", i+1), 11+i)
		serveTCP(t, h)
		serveUDP(t, h)
		tp.backends = append(tp.backends, h)
	}
	return tp
}

// attach makes a namespace linked to the node: node side named nodeLink,
// 198.18.<subnet>.1/24 and 2001:db8:<subnet>::1/64; far side eth0 with .2 and ::2,
// and default routes through the node.
func (tp *topology) attach(t *testing.T, name, nodeLink string, subnet int) *host {
	t.Helper()
	h := &host{
		name:   name,
		ns:     testutil.NewNetNS(t),
		v4:     netip.MustParseAddr(fmt.Sprintf("198.18.%d.2", subnet)),
		v6:     netip.MustParseAddr(fmt.Sprintf("2001:db8:%d::2", subnet)),
		nodeV4: netip.MustParseAddr(fmt.Sprintf("198.18.%d.1", subnet)),
		nodeV6: netip.MustParseAddr(fmt.Sprintf("2001:db8:%d::1", subnet)),
	}
	var err error
	tp.node.Do(t, func() {
		err = netlink.LinkAdd(&netlink.Veth{
			LinkAttrs:     netlink.LinkAttrs{Name: nodeLink},
			PeerName:      "eth0",
			PeerNamespace: netlink.NsFd(int(h.ns.Handle())),
		})
		if err == nil {
			err = linkUp(nodeLink, netip.PrefixFrom(h.nodeV4, 24), netip.PrefixFrom(h.nodeV6, 64))
		}
	})
	if err != nil {
		t.Fatalf("veth to %s: %v", name, err)
	}
	h.ns.Do(t, func() {
		if err = linkUp("eth0", netip.PrefixFrom(h.v4, 24), netip.PrefixFrom(h.v6, 64)); err != nil {
			return
		}
		var l netlink.Link
		if l, err = netlink.LinkByName("eth0"); err != nil {
			return
		}
		for _, gw := range []netip.Addr{h.nodeV4, h.nodeV6} {
			if err = netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: net.IP(gw.AsSlice())}); err != nil {
				err = fmt.Errorf("default route via %v: %w", gw, err)
				return
			}
		}
	})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return h
}

// linkUp gives the link its addresses (no duplicate address detection, so
// IPv6 addresses, the kernel's link-local one included, are final at once)
// and sets it up.
func linkUp(name string, addrs ...netip.Prefix) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	for _, p := range addrs {
		ipn := &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
		if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: ipn, Flags: unix.IFA_F_NODAD}); err != nil {
			return fmt.Errorf("%s: adding %v: %w", name, p, err)
		}
	}
	if err := testutil.NoDAD(name); err != nil {
		return err
	}
	return netlink.LinkSetUp(l)
}

// reply is what a backend answers: its name and the address it saw the
// request come from.
type reply struct {
	name string
	peer netip.Addr
}

func (r reply) String() string { return r.name + " " + r.peer.String() }

func parseReply(b []byte) (reply, error) {
	name, peer, ok := strings.Cut(strings.TrimSpace(string(b)), " ")
	if !ok {
		return reply{}, fmt.Errorf("malformed reply %q", b)
	}
	p, err := netip.ParseAddr(peer)
	return reply{name: name, peer: p}, err
}

func serveTCP(t *testing.T, h *host) { serveTCPOn(t, h, backendTCPPort) }

// serveTCPOn is serveTCP at another port.
func serveTCPOn(t *testing.T, h *host, port int) {
	t.Helper()
	h.ns.Serve(t, "tcp", fmt.Sprintf(":%d", port), func(c net.Conn) { // both families
		peer := c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
		fmt.Fprintf(c, "%s %s\n", h.name, peer)
	})
}

func serveUDP(t *testing.T, h *host) {
	t.Helper()
	var (
		pc  net.PacketConn
		err error
	)
	h.ns.Do(t, func() { pc, err = net.ListenPacket("udp", fmt.Sprintf(":%d", backendUDPPort)) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			peer := from.(*net.UDPAddr).AddrPort().Addr().Unmap()
			pc.WriteTo(fmt.Appendf(nil, "%s %s\n", h.name, peer), from)
		}
	}()
}

// requestTimeout bounds each request; the emulated VM is slow, but a
// request that gets through at all is answered in far less.
const requestTimeout = 10 * time.Second

// tcp opens n connections from h to addr, one after another, and returns
// the replies. A connection that fails fails the test.
func (h *host) tcp(t *testing.T, addr netip.AddrPort, n int) []reply {
	t.Helper()
	var out []reply
	for i := range n {
		r, err := h.tcpOnce(t, addr, requestTimeout)
		if err != nil {
			t.Fatalf("%s: connection %d to %v: %v", h.name, i+1, addr, err)
		}
		out = append(out, r)
	}
	return out
}

func (h *host) tcpOnce(t *testing.T, addr netip.AddrPort, timeout time.Duration) (reply, error) {
	t.Helper()
	return h.tcpDial(t, &net.Dialer{Timeout: timeout}, addr)
}

// tcpDial opens one connection from h to addr with d (whose Timeout also
// bounds the reply) and reads the reply.
func (h *host) tcpDial(t *testing.T, d *net.Dialer, addr netip.AddrPort) (reply, error) {
	t.Helper()
	var (
		c   net.Conn
		err error
	)
	h.ns.Do(t, func() { c, err = d.Dial("tcp", addr.String()) }) // the socket stays in h.ns
	if err != nil {
		return reply{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(d.Timeout))
	b, err := io.ReadAll(c)
	if err != nil {
		return reply{}, err
	}
	return parseReply(b)
}

// udpAttempts bounds how often one UDP request is sent before giving up.
const udpAttempts = 4

// udp sends n requests from h to addr, each from a new socket (a new source
// port, so a new IPVS connection), each retried at most udpAttempts times
// with a read deadline, and returns the replies.
func (h *host) udp(t *testing.T, addr netip.AddrPort, n int) []reply {
	t.Helper()
	var out []reply
	for i := range n {
		var (
			c   net.Conn
			err error
		)
		h.ns.Do(t, func() { c, err = net.Dial("udp", addr.String()) })
		if err != nil {
			t.Fatal(err)
		}
		r, err := udpRequest(c)
		c.Close()
		if err != nil {
			t.Fatalf("%s: UDP request %d to %v: %v", h.name, i+1, addr, err)
		}
		out = append(out, r)
	}
	return out
}

func udpRequest(c net.Conn) (reply, error) {
	buf := make([]byte, 512)
	var err error
	for range udpAttempts {
		if _, err = c.Write([]byte("who?")); err != nil {
			continue
		}
		c.SetReadDeadline(time.Now().Add(requestTimeout / udpAttempts))
		var n int
		if n, err = c.Read(buf); err == nil {
			return parseReply(buf[:n])
		}
	}
	return reply{}, fmt.Errorf("no answer after %d attempts: %w", udpAttempts, err)
}

// count returns how many replies each backend gave.
func count(rs []reply) map[string]int {
	m := map[string]int{}
	for _, r := range rs {
		m[r.name]++
	}
	return m
}

// peers returns every distinct peer address the backends saw.
func peers(rs []reply) map[netip.Addr]bool {
	m := map[netip.Addr]bool{}
	for _, r := range rs {
		m[r.peer] = true
	}
	return m
}

// node holds the kernel clients of one Proxier in the node namespace.
type nodeKit struct {
	p     *Proxier
	ipvs  *ipvs.Client
	rules map[Family]Rules
	// flavor is the iptables back end's flavor (legacy or nft), for
	// choosing the reference tool that reads its rules.
	flavor iptables.Flavor
}

// newProxier makes a Proxier for cfg in the node namespace, with fresh
// clients, as a restarted program would.
func (tp *topology) newProxier(t *testing.T, cfg Config) *nodeKit {
	t.Helper()
	if tp.mode != VIPAddresses {
		cfg.VIPMode = tp.mode
	}
	d := tp.nodeDeps(t, cfg, iptables.FlavorAuto)
	k := &nodeKit{ipvs: d.IPVS.(*ipvs.Client), rules: d.Rules}
	for _, r := range d.Rules {
		if ipt, ok := r.(*iptables.IPTablesBackend); ok {
			k.flavor = ipt.Flavor()
		}
	}
	var err error
	k.p, err = New(&cfg, d)
	must(t, err)
	return k
}

// nodeDeps opens fresh kernel clients in the node namespace for cfg, with
// the iptables back end in flavor fl, closed when t ends. Conntrack is
// left unset.
func (tp *topology) nodeDeps(t *testing.T, cfg Config, fl iptables.Flavor) Deps {
	t.Helper()
	h := tp.node.Handle()
	ipvsc, err := ipvs.New(&ipvs.Config{NetNS: h})
	must(t, err)
	t.Cleanup(func() { ipvsc.Close() })
	inst := cfg.Instance
	if inst == "" {
		inst = DefaultInstance
	}
	link, err := dummy.New(&dummy.Config{NetNS: h, Owner: names.Mark(inst)})
	must(t, err)
	t.Cleanup(func() { link.Close() })
	sys, err := sysctl.New(&sysctl.Config{NetNS: h})
	must(t, err)
	t.Cleanup(func() { sys.Close() })
	d := Deps{IPVS: ipvsc, Link: link, Sysctls: sys, Rules: map[Family]Rules{}}
	for f := range enabledFamilies(&cfg) {
		switch cfg.Backend {
		case NFTables:
			r, err := iptables.NewNFTables(&iptables.NFTablesConfig{NetNS: h, Family: f, Instance: cfg.Instance, KubeProxyNames: cfg.KubeProxyNames})
			must(t, err)
			t.Cleanup(func() { r.Close() })
			d.Rules[f] = r
		case IPTables:
			r, err := iptables.NewIPTables(&iptables.IPTablesConfig{NetNS: h, Family: f, Flavor: fl, Instance: cfg.Instance, KubeProxyNames: cfg.KubeProxyNames})
			must(t, err)
			t.Cleanup(func() { r.Close() })
			d.Rules[f] = r
		}
	}
	return d
}

// ipvsConns returns the client addresses in the node's IPVS connection
// table (/proc/net/ip_vs_conn, IPv4 entries). Unlike the counters, which
// the kernel's estimator sums every 2 s, it is current.
func (tp *topology) ipvsConns(t *testing.T) map[netip.Addr]bool {
	t.Helper()
	var (
		b   []byte
		err error
	)
	tp.node.Do(t, func() { b, err = os.ReadFile("/proc/thread-self/net/ip_vs_conn") })
	must(t, err)
	out := map[netip.Addr]bool{}
	for _, l := range strings.Split(string(b), "\n")[1:] {
		// Pro FromIP FPrt ToIP TPrt DestIP DPrt State Expires ...
		f := strings.Fields(l)
		if len(f) < 2 || len(f[1]) != 8 {
			continue
		}
		v, err := strconv.ParseUint(f[1], 16, 32)
		if err != nil {
			t.Fatalf("ip_vs_conn line %q: %v", l, err)
		}
		out[netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})] = true
	}
	return out
}

// isTimeout reports whether err is a dial that timed out (a dropped SYN),
// not one refused or reset.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
