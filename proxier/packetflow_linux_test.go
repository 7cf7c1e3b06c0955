package proxier

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// packetFlowDoc is the page whose commands TestIntegrationPacketFlowDocCommands runs.
const packetFlowDoc = "../docs/packet-flow.md"

// docCommand is one command of the doc's indented code blocks.
type docCommand struct {
	line int    // 1-based line of the doc it is on
	text string // the command, without its comment
}

// tool is the program the command runs, e.g. "ipvsadm".
func (c docCommand) tool() string {
	f := strings.Fields(c.text)
	if len(f) == 0 {
		return ""
	}
	return filepath.Base(f[0])
}

// backends says which back end's node shows what the command reads:
// iptables, ip6tables and ipset read the iptables back end's objects, nft
// the nftables back end's; every other tool reads what both have.
func (c docCommand) backends() []Backend {
	switch t := c.tool(); {
	case t == "ipset" || strings.HasPrefix(t, "iptables") || strings.HasPrefix(t, "ip6tables"):
		return []Backend{IPTables}
	case t == "nft":
		return []Backend{NFTables}
	}
	return []Backend{IPTables, NFTables}
}

// grepped says the command filters its output through grep: it must print
// something.
func (c docCommand) grepped() bool { return regexp.MustCompile(`\|\s*grep\b`).MatchString(c.text) }

// listsFlows says the command lists conntrack entries: the test sent
// traffic for each such command, so it must print at least one.
func (c docCommand) listsFlows() bool {
	f := strings.Fields(c.text)
	return c.tool() == "conntrack" && len(f) > 1 && (f[1] == "-L" || f[1] == "--dump")
}

// monitor says the command runs until stopped (nft monitor).
func (c docCommand) monitor() bool {
	f := strings.Fields(c.text)
	return c.tool() == "nft" && len(f) > 1 && f[1] == "monitor"
}

// docCommands reads the commands of every indented code block of the
// Markdown file at path: a block starts with a line indented by four spaces
// or more after a blank line, and runs on over such lines and blank lines.
// A "# comment" (outside quotes) is dropped, and commands separated by ";"
// (outside quotes) on one line are separate commands.
func docCommands(t *testing.T, path string) []docCommand {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	var (
		out       []docCommand
		inBlock   bool
		prevBlank = true
	)
	for i, l := range strings.Split(string(b), "\n") {
		l = strings.TrimRight(l, " \t\r")
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			t.Fatalf("%s:%d: a fenced code block; this test reads only indented ones, extend it", path, i+1)
		}
		blank := l == ""
		indented := strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t")
		switch {
		case blank:
		case indented && (inBlock || prevBlank):
			inBlock = true
			for _, c := range splitCommands(stripComment(strings.TrimSpace(l))) {
				out = append(out, docCommand{line: i + 1, text: c})
			}
		default:
			inBlock = false
		}
		prevBlank = blank
	}
	return out
}

// stripComment drops a shell comment: from a '#' at the start or after a
// blank, outside quotes, to the end.
func stripComment(s string) string {
	var quote rune
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return strings.TrimSpace(s[:i])
		}
	}
	return s
}

// splitCommands splits s at each ';' outside quotes, and drops empty
// commands.
func splitCommands(s string) []string {
	var (
		out   []string
		quote rune
		start int
	)
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == ';':
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	out = append(out, s[start:])
	var cmds []string
	for _, c := range out {
		if c = strings.TrimSpace(c); c != "" {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// TestPacketFlowDocParses checks the reading of the doc's commands, which
// the VM test relies on: it needs neither root nor a kernel.
func TestPacketFlowDocParses(t *testing.T) {
	cmds := docCommands(t, packetFlowDoc)
	if len(cmds) < 40 {
		t.Fatalf("read %d commands from %s, want 40 or more: %+v", len(cmds), packetFlowDoc, cmds)
	}
	has := func(text string) docCommand {
		t.Helper()
		for _, c := range cmds {
			if c.text == text {
				return c
			}
		}
		t.Errorf("no command %q among those read", text)
		return docCommand{}
	}
	// A ';' inside quotes is not a separator; one outside is.
	has("nft 'add chain ip trace pre { type filter hook prerouting priority -300; }'")
	has("iptables-save -t nat | grep IPVSKIT")
	has("iptables-save -t filter | grep IPVSKIT")
	if c := has("ipvsadm -Lnc | grep 198.18.100.1:80"); !c.grepped() || len(c.backends()) != 2 {
		t.Errorf("%q: grepped %v, back ends %v; want grepped, both", c.text, c.grepped(), c.backends())
	}
	if c := has("nft monitor trace"); !c.monitor() {
		t.Errorf("%q is not a monitor", c.text)
	}
	for _, c := range cmds {
		if strings.Contains(c.text, "#") || strings.HasSuffix(c.text, ";") {
			t.Errorf("doc line %d: comment or separator left in %q", c.line, c.text)
		}
	}
}

// The example node of docs/packet-flow.md ("The example node"), built in
// namespaces: the node, a client outside it, the pod on this node, the pod
// on another node (linked to this node directly, its replies routed back
// through it as a real other node's would be), and a pod of another node
// that connects to the cluster IP (198.19.3.9, the ClusterIP section's
// client).
var (
	exNodeV4, exNodeV6         = a("198.18.0.10"), a("2001:db8::10")
	exPodCIDRV4, exPodCIDRV6   = pfx("198.19.0.0/16"), pfx("2001:db8:200::/56")
	exLocalV4, exLocalV6       = a("198.19.1.5"), a("2001:db8:200:1::5")
	exRemoteV4, exRemoteV6     = a("198.19.2.7"), a("2001:db8:200:2::7")
	exClusterV4, exClusterV6   = a("198.18.100.1"), a("2001:db8:100::1")
	exDNSV4, exDNSV6           = a("198.18.100.2"), a("2001:db8:100::2")
	exExternalV4, exExternalV6 = a("198.18.200.1"), a("2001:db8:300::1")
	exLBV4, exLBV6             = a("198.18.201.1"), a("2001:db8:301::1")
	exLBRange                  = pfx("198.18.50.0/24")
	exOutsideV4, exOutsideV6   = a("198.18.60.9"), a("2001:db8:60::9")
	exAdmittedV4               = a("198.18.50.20") // in the source range, as in the doc
	exPodClientV4              = a("198.19.3.9")
	exPodClientV6              = a("2001:db8:200:3::9")
)

const (
	exNodePort    = 30080
	exHealthCheck = 30500
)

// exampleState is the doc's example node as a State: one service with
// every kind of VIP, dual stack, external traffic policy Local (the
// load-balancer IP has only the local endpoint, and a health-check node
// port), one endpoint on this node (hairpin) and one on another; and a
// second service whose cluster IP serves UDP.
func exampleState() State {
	eps := func(local, remote []netip.Addr) []Endpoint {
		var out []Endpoint
		for i := range local {
			out = append(out, Endpoint{Addr: local[i], Ready: true, Local: true}, Endpoint{Addr: remote[i], Ready: true})
		}
		return out
	}
	pods := eps([]netip.Addr{exLocalV4, exLocalV6}, []netip.Addr{exRemoteV4, exRemoteV6})
	return State{
		Node: Node{Addresses: []netip.Addr{exNodeV4, exNodeV6}},
		Services: map[string]Service{
			"default/web": {
				ClusterIPs:               []netip.Addr{exClusterV4, exClusterV6},
				Ports:                    []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: backendTCPPort, NodePort: exNodePort}},
				ExternalIPs:              []netip.Addr{exExternalV4, exExternalV6},
				LoadBalancerIPs:          []netip.Addr{exLBV4, exLBV6},
				LoadBalancerSourceRanges: []netip.Prefix{exLBRange},
				ExternalTrafficPolicy:    Local,
				HealthCheckNodePort:      exHealthCheck,
				Endpoints:                pods,
			},
			"default/dns": {
				ClusterIPs: []netip.Addr{exDNSV4, exDNSV6},
				Ports:      []Port{{Name: "dns", Protocol: UDP, Port: 53, TargetPort: backendUDPPort}},
				Endpoints:  pods,
			},
		},
	}
}

// exampleNode is the namespaces of the example node.
type exampleNode struct {
	node, outside       *testutil.NetNS
	podLocal, podRemote *host
	podClient           *testutil.NetNS
}

func newExampleNode(t *testing.T) *exampleNode {
	t.Helper()
	node := testutil.NewNetNS(t)
	testutil.RequireIPVS(t, node)
	testutil.RequireDummy(t, node)
	ex := &exampleNode{node: node}
	// eth0: the node's own link, to the client outside, whose addresses
	// (the client, and one in the load balancer's source range) are
	// routed through its end of the link.
	ex.outside = ex.link(t, "outside", "eth0",
		[]netip.Prefix{netip.PrefixFrom(exNodeV4, 24), netip.PrefixFrom(exNodeV6, 64)},
		[]netip.Prefix{pfx("198.18.0.1/24"), pfx("2001:db8::1/64"), netip.PrefixFrom(exOutsideV4, 32), netip.PrefixFrom(exAdmittedV4, 32), netip.PrefixFrom(exOutsideV6, 128)},
		exNodeV4, exNodeV6)
	ex.routes(t, node, "eth0", a("198.18.0.1"), a("2001:db8::1"),
		pfx("198.18.60.0/24"), exLBRange, pfx("2001:db8:60::/64"))
	ex.podLocal = ex.pod(t, "pod-local", "vethlocal", exLocalV4, exLocalV6, 1)
	ex.podRemote = ex.pod(t, "pod-remote", "vethremote", exRemoteV4, exRemoteV6, 2)
	ex.podClient = ex.pod(t, "pod-client", "vethclient", exPodClientV4, exPodClientV6, 3).ns
	for _, h := range []*host{ex.podLocal, ex.podRemote} {
		serveEcho(t, h, backendTCPPort) // the connection stays open, established, while the commands read it
		serveUDP(t, h)
	}
	return ex
}

// pod makes a pod namespace on subnet n of both pod networks (198.19.n.0/24,
// 2001:db8:200:n::/64), the node's side at .1 and ::1.
func (ex *exampleNode) pod(t *testing.T, name, nodeLink string, v4, v6 netip.Addr, n int) *host {
	t.Helper()
	h := &host{name: name, v4: v4, v6: v6,
		nodeV4: a(fmt.Sprintf("198.19.%d.1", n)), nodeV6: a(fmt.Sprintf("2001:db8:200:%d::1", n))}
	h.ns = ex.link(t, name, nodeLink,
		[]netip.Prefix{netip.PrefixFrom(h.nodeV4, 24), netip.PrefixFrom(h.nodeV6, 64)},
		[]netip.Prefix{netip.PrefixFrom(v4, 24), netip.PrefixFrom(v6, 64)},
		h.nodeV4, h.nodeV6)
	return h
}

// link makes a namespace linked to the node by a veth pair: nodeLink in
// the node with nodeAddrs, eth0 in the new namespace with farAddrs and
// default routes via gw4 and gw6.
func (ex *exampleNode) link(t *testing.T, name, nodeLink string, nodeAddrs, farAddrs []netip.Prefix, gw4, gw6 netip.Addr) *testutil.NetNS {
	t.Helper()
	far := testutil.NewNetNS(t)
	var err error
	ex.node.Do(t, func() {
		err = netlink.LinkAdd(&netlink.Veth{
			LinkAttrs:     netlink.LinkAttrs{Name: nodeLink},
			PeerName:      "eth0",
			PeerNamespace: netlink.NsFd(int(far.Handle())),
		})
		if err == nil {
			err = linkUp(nodeLink, nodeAddrs...)
		}
	})
	if err != nil {
		t.Fatalf("veth to %s: %v", name, err)
	}
	far.Do(t, func() { err = linkUp("eth0", farAddrs...) })
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	ex.routes(t, far, "eth0", gw4, gw6, netip.Prefix{})
	return far
}

// routes adds, in ns, a route over dev via gw4 or gw6 (by family) to each
// of dsts; the zero Prefix means the default routes of both families.
func (ex *exampleNode) routes(t *testing.T, ns *testutil.NetNS, dev string, gw4, gw6 netip.Addr, dsts ...netip.Prefix) {
	t.Helper()
	var err error
	ns.Do(t, func() {
		var l netlink.Link
		if l, err = netlink.LinkByName(dev); err != nil {
			return
		}
		for _, d := range dsts {
			var rs []*netlink.Route
			switch {
			case !d.IsValid():
				rs = []*netlink.Route{{Gw: net.IP(gw4.AsSlice())}, {Gw: net.IP(gw6.AsSlice())}}
			case d.Addr().Is4():
				rs = []*netlink.Route{{Gw: net.IP(gw4.AsSlice()), Dst: ipNet(d)}}
			default:
				rs = []*netlink.Route{{Gw: net.IP(gw6.AsSlice()), Dst: ipNet(d)}}
			}
			for _, r := range rs {
				r.LinkIndex = l.Attrs().Index
				if err = netlink.RouteAdd(r); err != nil {
					err = fmt.Errorf("route to %v via %v: %w", d, r.Gw, err)
					return
				}
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// holdTCP connects from src (in ns) to dst, reads the backend's answer,
// and keeps the connection open until t ends. A zero src lets the kernel
// choose.
func holdTCP(t *testing.T, ns *testutil.NetNS, src netip.Addr, dst netip.AddrPort, timeout time.Duration) (reply, error) {
	t.Helper()
	d := net.Dialer{Timeout: timeout}
	if src.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: net.IP(src.AsSlice())}
	}
	var (
		c   net.Conn
		err error
	)
	ns.Do(t, func() { c, err = d.Dial("tcp", dst.String()) })
	if err != nil {
		return reply{}, err
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return reply{}, err
	}
	return parseReply([]byte(line))
}

// exNeighbour is another program's objects in the node, made before the
// Proxier's first Sync with its own tools: a virtual server at another port
// of the example's external IP, an nftables table "inet filter" with an
// input chain, an iptables chain INPUT jumps to, and ipsets named like the
// iptables back end's. The last lines raise the namespace's UDP conntrack
// timeouts, so that the test's UDP flow outlives the commands that read it.
const exNeighbour = `PATH=/usr/sbin:/sbin:/usr/bin:/bin
set -e
ipvsadm -A -t 198.18.200.1:8000 -s wrr
ipvsadm -a -t 198.18.200.1:8000 -r 198.19.2.7:8080 -m -w 3
nft -f - <<'EOF'
table inet filter {
	set admins {
		type ipv4_addr
		elements = { 198.18.60.9 }
	}
	chain input {
		type filter hook input priority filter; policy accept;
		ip saddr @admins tcp dport 22 counter accept
	}
}
EOF
iptables-restore --noflush <<'EOF'
*filter
:THEIR-INPUT - [0:0]
-A INPUT -j THEIR-INPUT
-A THEIR-INPUT -s 198.18.60.0/24 -p tcp --dport 22 -j ACCEPT
COMMIT
EOF
ipset create IPVSKIT-EXTRA hash:ip family inet
ipset add IPVSKIT-EXTRA 198.18.60.9
ipset create IPVSKIT-6-EXTRA hash:ip family inet6
ipset add IPVSKIT-6-EXTRA 2001:db8:60::9
sysctl -qw net.netfilter.nf_conntrack_udp_timeout=600 net.netfilter.nf_conntrack_udp_timeout_stream=600
`

// exNeighbourView prints the neighbour's objects, as its tools show them.
const exNeighbourView = `PATH=/usr/sbin:/sbin:/usr/bin:/bin
ipvsadm -Sn | grep ' 198.18.200.1:8000 '
nft list table inet filter
iptables-save -t filter | grep THEIR-INPUT
ipset save IPVSKIT-EXTRA 2>&1; ipset save IPVSKIT-6-EXTRA 2>&1
true
`

// neighbourCounters are the counters in the neighbour's view, which traffic
// changes.
var neighbourCounters = regexp.MustCompile(`packets \d+ bytes \d+|\[\d+:\d+\]`)

func (ex *exampleNode) neighbour(t *testing.T) string {
	t.Helper()
	return neighbourCounters.ReplaceAllString(ex.node.Exec(t, "sh", "-c", exNeighbourView), "")
}

// TestIntegrationPacketFlowDocCommands builds the example node of
// docs/packet-flow.md in the VM, once per netfilter back end, beside
// another program's objects (exNeighbour), opens a Proxier for it with
// Open and syncs the doc's State (exampleState), sends the traffic the doc
// describes (held open), and then runs every command of the doc's indented
// code blocks in the node's namespace: each must exit 0, print something
// when it pipes into grep, and list at least one flow when it is a
// conntrack listing. Commands of iptables, ip6tables and ipset run on the
// iptables back end's node, those of nft on the nftables back end's, the
// others on both; nft monitor runs while connections to the cluster IP
// are made, until it prints. The neighbour's objects must be unchanged
// after the commands and after Cleanup.
func TestIntegrationPacketFlowDocCommands(t *testing.T) {
	cmds := docCommands(t, packetFlowDoc)
	if len(cmds) < 40 {
		t.Fatalf("read %d commands from %s, want 40 or more", len(cmds), packetFlowDoc)
	}
	for _, be := range []Backend{IPTables, NFTables} {
		t.Run(be.String(), func(t *testing.T) {
			var mine []docCommand
			for _, c := range cmds {
				if slices.Contains(c.backends(), be) {
					mine = append(mine, c)
				}
			}
			testPacketFlowDoc(t, be, mine)
		})
	}
}

func testPacketFlowDoc(t *testing.T, be Backend, cmds []docCommand) {
	ctx := context.Background()
	ex := newExampleNode(t)
	ex.node.Exec(t, "sh", "-c", exNeighbour)
	theirs := ex.neighbour(t)
	for _, w := range []string{"-A -t 198.18.200.1:8000 -s wrr", "-r 198.19.2.7:8080 -m -w 3", "table inet filter {", "ip saddr @admins tcp dport 22",
		"-A INPUT -j THEIR-INPUT", "add IPVSKIT-EXTRA 198.18.60.9", "add IPVSKIT-6-EXTRA 2001:db8:60::9"} {
		if !strings.Contains(theirs, w) {
			t.Fatalf("the neighbour's objects lack %q:\n%s", w, theirs)
		}
	}

	cfg := &Config{Backend: be, Families: []Family{IPv4, IPv6},
		LocalDetector: LocalDetector{ClusterCIDRs: []netip.Prefix{exPodCIDRV4, exPodCIDRV6}}}
	p, err := Open(ctx, cfg, ex.node.Handle())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer p.Close()
	state := exampleState()
	if _, err := p.Sync(ctx, &state); err != nil {
		t.Fatalf("Sync: %v", err)
	}

	ex.sendTraffic(t)
	ex.runCommands(t, cmds)

	if got := ex.neighbour(t); got != theirs {
		t.Errorf("the neighbour's objects changed by the Sync and the doc's commands (-want +got):\n%s", lineDiff(theirs, got))
	}
	if err := p.Cleanup(ctx); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if got := ex.neighbour(t); got != theirs {
		t.Errorf("the neighbour's objects changed by Cleanup (-want +got):\n%s", lineDiff(theirs, got))
	}
	left := ex.node.Exec(t, "sh", "-c", "PATH=/usr/sbin:/sbin:/usr/bin:/bin\n"+
		"ipvsadm -Sn; ip -o link; nft list tables; ipset list -n; iptables-save; ip6tables-save")
	for _, l := range strings.Split(left, "\n") {
		if strings.Contains(l, "198.18.100.") || strings.Contains(l, DefaultLinkName) || strings.Contains(l, "ipvskit") ||
			(strings.Contains(l, "IPVSKIT-") && !strings.Contains(l, "EXTRA")) {
			t.Errorf("left after Cleanup: %q", l)
		}
	}
}

// sendTraffic makes the connections the doc's commands read, and keeps
// them open until the test ends; each answer is checked against what the
// doc says of it.
func (ex *exampleNode) sendTraffic(t *testing.T) {
	t.Helper()
	want := func(what string, r reply, err error, backends []string, peer netip.Addr) {
		t.Helper()
		switch {
		case err != nil:
			t.Fatalf("%s: %v", what, err)
		case !slices.Contains(backends, r.name) || r.peer != peer:
			t.Errorf("%s: answered by %s, which saw %v; want one of %v seeing %v", what, r.name, r.peer, backends, peer)
		}
	}
	local, both := []string{ex.podLocal.name}, []string{ex.podLocal.name, ex.podRemote.name}
	// ClusterIP: a pod of another node (inside the pod network: not
	// masqueraded), both families.
	r, err := holdTCP(t, ex.podClient, netip.Addr{}, netip.AddrPortFrom(exClusterV4, 80), requestTimeout)
	want("pod to the cluster IP", r, err, both, exPodClientV4)
	r, err = holdTCP(t, ex.podClient, netip.Addr{}, netip.AddrPortFrom(exClusterV6, 80), requestTimeout)
	want("pod to the IPv6 cluster IP", r, err, both, exPodClientV6)
	// NodePort and load-balancer IP, policy Local: the local endpoint,
	// which sees the client's own address.
	r, err = holdTCP(t, ex.outside, exOutsideV4, netip.AddrPortFrom(exNodeV4, exNodePort), requestTimeout)
	want("client outside to the node port", r, err, local, exOutsideV4)
	r, err = holdTCP(t, ex.outside, exAdmittedV4, netip.AddrPortFrom(exLBV4, 80), requestTimeout)
	want("client in the source range to the load-balancer IP", r, err, local, exAdmittedV4)
	// Outside the source range: dropped silently.
	if r, err := holdTCP(t, ex.outside, exOutsideV4, netip.AddrPortFrom(exLBV4, 80), 3*time.Second); err == nil {
		t.Errorf("client outside the source range got an answer from the load-balancer IP: %v", r)
	} else if !isTimeout(err) {
		t.Errorf("client outside the source range: %v, want no answer (dropped)", err)
	}
	// UDP to the second service, from one socket kept open.
	var c net.Conn
	ex.podClient.Do(t, func() { c, err = net.Dial("udp", netip.AddrPortFrom(exDNSV4, 53).String()) })
	must(t, err)
	t.Cleanup(func() { c.Close() })
	r, err = udpRequest(c)
	want("pod to the UDP cluster IP", r, err, both, exPodClientV4)
}

// runCommands runs cmds in the node's namespace, in the doc's order, and
// fails t for each that does not do what the doc says. The commands run
// from one shell script per stretch between monitors (in the emulated VM
// every exec from the test costs seconds), each under sh -c, with its
// output and exit status written to files; a monitor runs on its own.
func (ex *exampleNode) runCommands(t *testing.T, cmds []docCommand) {
	t.Helper()
	for len(cmds) > 0 {
		i := 0
		for i < len(cmds) && !cmds[i].monitor() {
			i++
		}
		ex.runBatch(t, cmds[:i])
		if i < len(cmds) {
			ex.runMonitor(t, cmds[i])
			i++
		}
		cmds = cmds[i:]
	}
}

// commandTimeout bounds each command: none of the doc's commands but a
// monitor waits for anything.
const commandTimeout = 120

func (ex *exampleNode) runBatch(t *testing.T, cmds []docCommand) {
	t.Helper()
	if len(cmds) == 0 {
		return
	}
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("PATH=/usr/sbin:/sbin:/usr/bin:/bin\nexport PATH\n")
	for i, c := range cmds {
		f := filepath.Join(dir, strconv.Itoa(i))
		fmt.Fprintf(&b, "timeout %d sh -c '%s' >%s.out 2>%s.err; echo $? >%s.rc\n",
			commandTimeout, strings.ReplaceAll(c.text, "'", `'\''`), f, f, f)
	}
	ex.node.Exec(t, "sh", "-c", b.String())
	for i, c := range cmds {
		f := filepath.Join(dir, strconv.Itoa(i))
		read := func(ext string) string {
			b, err := os.ReadFile(f + ext)
			must(t, err)
			return string(b)
		}
		out, errOut, rc := read(".out"), read(".err"), strings.TrimSpace(read(".rc"))
		var problem string
		switch {
		case rc != "0":
			problem = "exit status " + rc
			if rc == strconv.Itoa(124) {
				problem += fmt.Sprintf(" (timed out after %d s)", commandTimeout)
			}
		case c.grepped() && strings.TrimSpace(out) == "":
			problem = "grep matched nothing"
		case c.listsFlows() && strings.TrimSpace(out) == "":
			problem = "no flow listed, though the test sent traffic for it"
		}
		if problem != "" {
			t.Errorf("%s:%d: %s: %s\nstdout:\n%s\nstderr:\n%s", packetFlowDoc, c.line, c.text, problem, out, errOut)
		}
	}
}

// runMonitor runs a command that waits for events (nft monitor trace)
// while it makes connections from a pod to the cluster IP, one at a time,
// until it prints a line or a deadline passes, then stops it.
func (ex *exampleNode) runMonitor(t *testing.T, c docCommand) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "exec "+c.text)
	cmd.Env = append(os.Environ(), "PATH=/usr/sbin:/sbin:/usr/bin:/bin")
	var errOut strings.Builder
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	ex.node.Start(t, cmd)
	lines := make(chan string)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	var (
		got   string
		tries int
	)
	deadline := time.Now().Add(6 * requestTimeout)
	for got == "" && time.Now().Before(deadline) {
		tries++
		ex.podClient.Do(t, func() {
			if conn, err := net.DialTimeout("tcp", netip.AddrPortFrom(exClusterV4, 80).String(), requestTimeout); err == nil {
				conn.Close()
			}
		})
		select {
		case l, ok := <-lines:
			if !ok {
				deadline = time.Time{} // it ended
			}
			got = l
		case <-time.After(2 * time.Second):
		}
	}
	cmd.Process.Kill()
	for range lines { // drain, so the reader ends
	}
	state := cmd.Wait()
	if got == "" {
		t.Errorf("%s:%d: %s: printed nothing after %d connections to %v (%v)\nstderr:\n%s",
			packetFlowDoc, c.line, c.text, tries, exClusterV4, state, errOut.String())
	}
}
