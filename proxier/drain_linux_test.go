package proxier

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestIntegrationDrain drains a backend that holds a live TCP connection,
// in the VM, once per netfilter back end (see topology: one client, three
// backends): the connection outlives its endpoint's removal while new
// connections go elsewhere, and Drain deletes the destination once the
// connection is gone, or, with the connection still open, once MaxDrain
// has passed. ipvsadm -Ln is the cross-check.
func TestIntegrationDrain(t *testing.T) {
	for _, v := range variants {
		be := v.be
		t.Run(v.String(), func(t *testing.T) {
			tp := newTopologyIn(t, v, 1, 3)
			for _, h := range tp.backends {
				serveEcho(t, h, backendEchoPort)
			}
			t.Run("ConnectionOutlivesItsEndpoint", func(t *testing.T) {
				testDrainUntilIdle(t, tp, be, ap("198.18.100.1:80"))
			})
			t.Run("MaxDrain", func(t *testing.T) {
				testDrainMax(t, tp, be, ap("198.18.100.2:80"))
			})
		})
	}
}

// backendEchoPort is where each backend greets a connection with its name
// and the peer it saw (as reply), then echoes every line back.
const backendEchoPort = 7070

// serveEcho serves that on port in h, both families; a connection stays
// open until the client closes it.
func serveEcho(t *testing.T, h *host, port int) {
	t.Helper()
	h.ns.Serve(t, "tcp", fmt.Sprintf(":%d", port), func(c net.Conn) {
		peer := c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
		if _, err := fmt.Fprintf(c, "%s %s\n", h.name, peer); err == nil {
			io.Copy(c, c)
		}
	})
}

// echoConn is a client's open connection to an echo service.
type echoConn struct {
	c       *net.TCPConn
	r       *bufio.Reader
	backend string     // the backend's name, from its greeting
	peer    netip.Addr // the address the backend saw the connection from
}

// dialEcho connects from h to vip and reads the backend's greeting.
func (h *host) dialEcho(t *testing.T, vip netip.AddrPort) *echoConn {
	t.Helper()
	var (
		c   net.Conn
		err error
	)
	h.ns.Do(t, func() { c, err = net.DialTimeout("tcp", vip.String(), requestTimeout) })
	if err != nil {
		t.Fatalf("%s: connecting to %v: %v", h.name, vip, err)
	}
	t.Cleanup(func() { c.Close() })
	ec := &echoConn{c: c.(*net.TCPConn), r: bufio.NewReader(c)}
	c.SetReadDeadline(time.Now().Add(requestTimeout))
	line, err := ec.r.ReadString('\n')
	if err != nil {
		t.Fatalf("%s: greeting from %v: %v", h.name, vip, err)
	}
	r, err := parseReply([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	ec.backend, ec.peer = r.name, r.peer
	return ec
}

// roundTrip sends a line and reads it back: data flows both ways.
func (ec *echoConn) roundTrip(msg string) error {
	ec.c.SetDeadline(time.Now().Add(requestTimeout))
	if _, err := io.WriteString(ec.c, msg+"\n"); err != nil {
		return err
	}
	line, err := ec.r.ReadString('\n')
	if err != nil {
		return err
	}
	if line != msg+"\n" {
		return fmt.Errorf("echoed %q, want %q", line, msg)
	}
	return nil
}

func (tp *topology) echoState(vip netip.AddrPort) State {
	return State{Services: map[string]Service{"echo": {
		ClusterIPs: []netip.Addr{vip.Addr()},
		Ports:      []Port{{Name: "echo", Protocol: TCP, Port: int(vip.Port()), TargetPort: backendEchoPort}},
		Endpoints:  tp.endpoints(true, false, []int{0, 1, 2}),
	}}}
}

func (tp *topology) backend(name string) *host {
	for _, h := range tp.backends {
		if h.name == name {
			return h
		}
	}
	return nil
}

func (k *nodeKit) mustSync(t *testing.T, s State) *Result {
	t.Helper()
	res, err := k.p.Sync(context.Background(), &s)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return res
}

func (k *nodeKit) mustDrain(t *testing.T) *DrainResult {
	t.Helper()
	d, err := k.p.Drain(context.Background())
	if err != nil {
		t.Fatalf("drain: %v", err)
	}
	return d
}

// ipvsadmDests returns, from ipvsadm -Ln for virtual server vip, each
// destination's Weight, ActiveConn and InActConn columns.
func (tp *topology) ipvsadmDests(t *testing.T, vip netip.AddrPort) map[string][]string {
	t.Helper()
	out := tp.node.Exec(t, "ipvsadm", "-Ln", "-t", vip.String())
	m := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		// "  -> 198.18.11.2:7070   Masq    1      0          0"
		if f := strings.Fields(l); len(f) == 6 && f[0] == "->" && f[1] != "RemoteAddress:Port" {
			m[f[1]] = f[3:]
		}
	}
	return m
}

// startDrain opens a connection from client-1 to vip and removes its
// backend from the State: the backend's destination must stay, at weight 0
// with the connection counted active, and the connection must still carry
// data both ways.
func startDrain(t *testing.T, tp *topology, k *nodeKit, vip netip.AddrPort) (*echoConn, *host) {
	t.Helper()
	c1 := tp.clients[0]
	k.mustSync(t, tp.echoState(vip))
	conn := c1.dialEcho(t, vip)
	if err := conn.roundTrip("before"); err != nil {
		t.Fatalf("the connection before the drain: %v", err)
	}
	x := tp.backend(conn.backend)
	if x == nil {
		t.Fatalf("greeted by unknown backend %q", conn.backend)
	}
	dest := netip.AddrPortFrom(x.v4, backendEchoPort)
	res := k.mustSync(t, without(tp.echoState(vip), "echo", x.v4))
	if got, want := kinds(&res.Plan.IPVSAdd), []string{fmt.Sprintf("update destination tcp %v -> %v", vip, dest)}; !slices.Equal(got, want) ||
		res.Plan.IPVSDelete.Len() != 0 || res.Draining != 1 {
		t.Fatalf("removing %s: draining %d, plan:\n%v", x.name, res.Draining, res.Plan)
	}
	if got := tp.ipvsadmDests(t, vip)[dest.String()]; !slices.Equal(got, []string{"0", "1", "0"}) {
		t.Errorf("ipvsadm -Ln: %s has weight, active, inactive %v; want 0 1 0", dest, got)
	}
	if err := conn.roundTrip("after"); err != nil {
		t.Fatalf("the connection after its endpoint's removal: %v", err)
	}
	return conn, x
}

func testDrainUntilIdle(t *testing.T, tp *topology, be Backend, vip netip.AddrPort) {
	k := tp.newProxier(t, Config{Backend: be})
	conn, x := startDrain(t, tp, k, vip)
	dest := netip.AddrPortFrom(x.v4, backendEchoPort)

	// New connections go only to the two others, round robin.
	var names []string
	for range 4 {
		c := tp.clients[0].dialEcho(t, vip)
		names = append(names, c.backend)
		c.c.Close()
	}
	want := map[string]int{}
	for _, h := range tp.backends {
		if h != x {
			want[h.name] = 2
		}
	}
	wantCounts(t, "new connections while draining", toReplies(names), want)

	if d := k.mustDrain(t); len(d.Ended) != 0 || d.Draining != 1 {
		t.Fatalf("Drain with the connection open: %+v", d)
	}
	if err := conn.roundTrip("still"); err != nil {
		t.Fatalf("the connection after a Drain: %v", err)
	}

	// Closed with a reset, the IPVS connection goes to CLOSE (a 10 s
	// timeout) and then away: Drain deletes the destination.
	conn.c.SetLinger(0)
	conn.c.Close()
	d := pollDrain(t, k, time.Minute)
	if got := ends(d); got != fmt.Sprintf("tcp %v -> %v idle", vip, dest) || d.Draining != 0 {
		t.Fatalf("Drain after the close: %q %+v", got, d)
	}
	if got := tp.ipvsadmDests(t, vip); got[dest.String()] != nil || len(got) != 2 {
		t.Errorf("ipvsadm -Ln after the drain: %v; want the two other destinations only", got)
	}
	if res := k.mustSync(t, without(tp.echoState(vip), "echo", x.v4)); !res.Plan.Empty() || res.Draining != 0 {
		t.Errorf("sync after the drain: draining %d, plan:\n%v", res.Draining, res.Plan)
	}
	if err := k.p.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func testDrainMax(t *testing.T, tp *topology, be Backend, vip netip.AddrPort) {
	k := tp.newProxier(t, Config{Backend: be, MaxDrain: time.Hour})
	clk := &fakeClock{t: t0}
	k.p.now = clk.now
	conn, x := startDrain(t, tp, k, vip)
	dest := netip.AddrPortFrom(x.v4, backendEchoPort)

	clk.add(time.Hour - time.Second)
	if d := k.mustDrain(t); len(d.Ended) != 0 || d.Draining != 1 {
		t.Fatalf("Drain before MaxDrain: %+v", d)
	}
	clk.add(time.Second)
	d := k.mustDrain(t)
	if got := ends(d); got != fmt.Sprintf("tcp %v -> %v expired", vip, dest) || d.Ended[0].ActiveConns != 1 || d.Draining != 0 {
		t.Fatalf("Drain at MaxDrain: %q %+v", got, d)
	}
	if got := tp.ipvsadmDests(t, vip); got[dest.String()] != nil || len(got) != 2 {
		t.Errorf("ipvsadm -Ln after MaxDrain: %v; want the two other destinations only", got)
	}
	// The connection is cut: with expire_nodest_conn (the sysctl
	// profile's), its next packet finds no destination.
	if err := conn.roundTrip("cut"); err == nil {
		t.Errorf("the connection still carries data after its destination was deleted")
	}
	if err := k.p.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// pollDrain calls Drain until a drain ends, for at most limit: the kernel
// expires an IPVS connection on its own timer, with no event to wait on.
func pollDrain(t *testing.T, k *nodeKit, limit time.Duration) *DrainResult {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		d := k.mustDrain(t)
		if len(d.Ended) > 0 {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("no drain ended in %v: %+v", limit, d)
		}
		<-tick.C
	}
}

func toReplies(names []string) []reply {
	out := make([]reply, len(names))
	for i, n := range names {
		out[i] = reply{name: n}
	}
	return out
}
