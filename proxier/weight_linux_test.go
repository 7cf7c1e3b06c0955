package proxier

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
)

// TestIntegrationWeight serves a wrr service weighted 1/2/3 (backend-1 at
// the default weight, backend-3 with thresholds) beside an echo service
// whose backend is quiesced, in the VM, with another program's weighted
// virtual servers present: 600 connections from 60 client addresses are
// answered within 15% of 100/200/300 and never by the quiesced backend,
// whose established connection keeps working; ipvsadm shows the weights
// (-Sn) and thresholds (-Ln --thresholds); a weight changed with ipvsadm
// -e behind the Proxier's back is repaired by Reconcile to the State's; a
// weight change is one request; a restarted Proxier's first Sync over the
// same State sends no IPVS request, counted by the client and by its
// SyncEvent; the other program's virtual servers are untouched at the end.
// Weights touch no netfilter rule and no VIP, so one back end and VIP mode
// covers them.
func TestIntegrationWeight(t *testing.T) {
	v := variants[0]
	tp := newTopologyIn(t, v, 1, 4)
	tp.addForeign(t)
	theirs := tp.addWeightedForeign(t)
	for _, h := range tp.backends {
		serveEcho(t, h, backendEchoPort)
	}
	c1 := tp.clients[0]
	sources := c1.addSources(t, 60)
	b1, b2, b3, b4 := tp.backends[0], tp.backends[1], tp.backends[2], tp.backends[3]
	web, echo := ap("198.18.100.1:80"), ap("198.18.100.2:7070")
	cfg := Config{Backend: v.be}

	// The echo service has only backend-4 at first: a connection to it
	// lands there, and stays open.
	k := tp.newCountedProxier(t, cfg)
	state := tp.weightedState(false)
	k.mustSync(t, state)
	conn := c1.dialEcho(t, echo)
	if conn.backend != b4.name {
		t.Fatalf("the echo connection went to %s, want %s", conn.backend, b4.name)
	}

	// backend-4 quiesced, backend-1 added: one update, one add.
	state = tp.weightedState(true)
	res := k.mustSync(t, state)
	wantKinds(t, "quiescing", &res.Plan.IPVSAdd,
		"add destination tcp 198.18.100.2:7070 -> 198.18.11.2:7070",
		"update destination tcp 198.18.100.2:7070 -> 198.18.14.2:7070")
	if res.Draining != 0 {
		t.Errorf("the quiesced endpoint drains: draining %d", res.Draining)
	}
	for i := range 5 {
		if c := c1.dialEcho(t, echo); c.backend != b1.name {
			t.Errorf("new echo connection %d went to %s, want %s", i+1, c.backend, b1.name)
		}
	}
	if err := conn.roundTrip("still here"); err != nil {
		t.Errorf("the quiesced backend's established connection: %v", err)
	}
	if got := tp.ipvsadmDests(t, echo)[netip.AddrPortFrom(b4.v4, backendEchoPort).String()]; strings.Join(got, " ") != "0 1 0" {
		t.Errorf("ipvsadm -Ln: the quiesced destination has weight, active, inactive %v; want 0 1 0", got)
	}
	if d := k.mustDrain(t); len(d.Ended) != 0 || d.Draining != 0 {
		t.Errorf("Drain touched the quiesced endpoint: %+v", d)
	}

	// 600 connections from 60 addresses, answered 1:2:3.
	got := count(c1.tcpFromEach(t, sources, web, 10))
	for _, w := range []struct {
		h    *host
		want int
	}{{b1, 100}, {b2, 200}, {b3, 300}} {
		if n := got[w.h.name]; n < w.want*85/100 || n > w.want*115/100 {
			t.Errorf("%s answered %d of 600, want %d ± 15%% (%v)", w.h.name, n, w.want, got)
		}
	}
	if got[b4.name] != 0 {
		t.Errorf("the quiesced %s answered %d (%v)", b4.name, got[b4.name], got)
	}
	tp.checkWeightsShown(t)

	// ipvsadm -e behind the Proxier's back: Reconcile repairs it to the
	// State's weight, and only it.
	dest2 := netip.AddrPortFrom(b2.v4, backendTCPPort).String()
	tp.node.Exec(t, "ipvsadm", "-e", "-t", web.String(), "-r", dest2, "-m", "-w", "7")
	rep, err := k.p.Reconcile(context.Background())
	must(t, err)
	wantReport(t, rep, "ipvs: destination tcp 198.18.100.1:80 -> "+dest2+": weight 7, want 2")
	if w := tp.ipvsadmDests(t, web)[dest2]; len(w) == 0 || w[0] != "2" {
		t.Errorf("after Reconcile, ipvsadm -Ln shows %s at weight %v, want 2", dest2, w)
	}
	wantReport(t, func() *ReconcileReport { r, err := k.p.Reconcile(context.Background()); must(t, err); return r }())

	// A weight change is one request and nothing else.
	state = withEndpoint(state, "web", 0, func(e *Endpoint) { e.Weight = 4 })
	before := k.ipvsRequests()
	res = k.mustSync(t, state)
	wantKinds(t, "a weight change", &res.Plan.IPVSAdd, "update destination tcp 198.18.100.1:80 -> 198.18.11.2:8080")
	if n := k.ipvsRequests() - before; n != 1 || res.Plan.IPVSDelete.Len() != 0 || len(res.Plan.Bind)+len(res.Plan.Unbind) != 0 || k.lastOps() != 1 {
		t.Errorf("a weight change sent %d IPVS requests (SyncEvent %d), want 1:\n%s", n, k.lastOps(), res.Plan)
	}

	// A restarted Proxier over the same weighted State sends nothing to
	// IPVS, and the quiesced endpoint does not start draining.
	k2 := tp.newCountedProxier(t, cfg)
	res = k2.mustSync(t, state)
	if n := k2.ipvsRequests(); n != 0 || k2.lastOps() != 0 || res.Plan.IPVSAdd.Len()+res.Plan.IPVSDelete.Len() != 0 {
		t.Errorf("the restart's first sync sent %d IPVS requests (SyncEvent %d), want 0:\n%s", n, k2.lastOps(), res.Plan)
	}
	if res.Draining != 0 {
		t.Errorf("the restart drains: draining %d", res.Draining)
	}
	if err := conn.roundTrip("after the restart"); err != nil {
		t.Errorf("the quiesced backend's established connection after the restart: %v", err)
	}
	if w := tp.ipvsadmDests(t, web)[netip.AddrPortFrom(b1.v4, backendTCPPort).String()]; len(w) == 0 || w[0] != "4" {
		t.Errorf("after the restart, backend-1 has weight %v, want 4", w)
	}

	// Cleanup leaves both of the other program's virtual servers.
	must(t, k2.p.Cleanup(context.Background()))
	snap := tp.snapshot(t)
	checkForeign(t, snap)
	for _, l := range snap.ipvsLines() {
		if strings.Contains(l, "198.18.100.") {
			t.Errorf("ipvsadm -Sn after Cleanup still has %q", l)
		}
	}
	if now := tp.node.Exec(t, "ipvsadm", "-Ln", "--thresholds", "-t", "198.18.200.2:8000"); now != theirs {
		t.Errorf("the other program's weighted virtual server changed:\n%s\nwas:\n%s", now, theirs)
	}
}

// weightedState is web (198.18.100.1:80, wrr, backends 1-3 weighted 1
// (the default), 2, 3 with thresholds) and echo (198.18.100.2:7070, on
// backend-4; with quiesced, backend-4 is quiesced and backend-1 serves).
func (tp *topology) weightedState(quiesced bool) State {
	b := tp.backends
	echo := []Endpoint{{Addr: b[3].v4, Ready: true, Quiesced: quiesced}}
	if quiesced {
		echo = append(echo, Endpoint{Addr: b[0].v4, Ready: true})
	}
	return State{Services: map[string]Service{
		"web": {
			ClusterIPs: []netip.Addr{a("198.18.100.1")},
			Ports:      []Port{portHTTP},
			Scheduler:  "wrr",
			Endpoints: []Endpoint{
				{Addr: b[0].v4, Ready: true},
				{Addr: b[1].v4, Ready: true, Weight: 2},
				{Addr: b[2].v4, Ready: true, Weight: 3, UpperThreshold: 1000, LowerThreshold: 800},
			},
		},
		"echo": {
			ClusterIPs: []netip.Addr{a("198.18.100.2")},
			Ports:      []Port{{Name: "echo", Protocol: TCP, Port: 7070, TargetPort: backendEchoPort}},
			Scheduler:  "wrr",
			Endpoints:  echo,
		},
	}}
}

// checkWeightsShown holds ipvsadm's views to the State: -Sn has each
// weight, -Ln --thresholds backend-3's thresholds.
func (tp *topology) checkWeightsShown(t *testing.T) {
	t.Helper()
	lines := tp.snapshot(t).ipvsLines()
	for _, w := range []string{
		"-a -t 198.18.100.1:80 -r 198.18.11.2:8080 -m -w 1",
		"-a -t 198.18.100.1:80 -r 198.18.12.2:8080 -m -w 2",
		"-a -t 198.18.100.1:80 -r 198.18.13.2:8080 -m -w 3",
		"-a -t 198.18.100.2:7070 -r 198.18.14.2:7070 -m -w 0",
	} {
		if !strings.Contains(strings.Join(lines, "\n")+"\n", w+"\n") {
			t.Errorf("ipvsadm -Sn lacks %q:\n%s", w, strings.Join(lines, "\n"))
		}
	}
	out := tp.node.Exec(t, "ipvsadm", "-Ln", "--thresholds", "-t", "198.18.100.1:80")
	th := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		// "  -> 198.18.13.2:8080   1000   800   0   300"
		if f := strings.Fields(l); len(f) == 6 && f[0] == "->" && f[1] != "RemoteAddress:Port" {
			th[f[1]] = f[2] + "/" + f[3]
		}
	}
	want := map[string]string{"198.18.11.2:8080": "0/0", "198.18.12.2:8080": "0/0", "198.18.13.2:8080": "1000/800"}
	for d, w := range want {
		if th[d] != w {
			t.Errorf("ipvsadm -Ln --thresholds: %s has %q, want %s:\n%s", d, th[d], w, out)
		}
	}
}

// addWeightedForeign makes another program's weighted virtual server, with
// thresholds, and returns what ipvsadm -Ln --thresholds shows of it.
func (tp *topology) addWeightedForeign(t *testing.T) string {
	t.Helper()
	tp.node.Exec(t, "sh", "-c", "PATH=/usr/sbin:/sbin:/usr/bin:/bin\nset -e\n"+
		"ipvsadm -A -t 198.18.200.2:8000 -s wrr\n"+
		"ipvsadm -a -t 198.18.200.2:8000 -r 198.18.11.2:8080 -m -w 5 -x 10 -y 4\n"+
		"ipvsadm -a -t 198.18.200.2:8000 -r 198.18.12.2:8080 -m -w 0\n")
	return tp.node.Exec(t, "ipvsadm", "-Ln", "--thresholds", "-t", "198.18.200.2:8000")
}

// addSources gives h's eth0 n more IPv4 addresses, 198.18.<subnet>.100 on,
// and returns them.
func (h *host) addSources(t *testing.T, n int) []netip.Addr {
	t.Helper()
	base := h.v4.As4()
	var out []netip.Addr
	var err error
	h.ns.Do(t, func() {
		var l netlink.Link
		if l, err = netlink.LinkByName("eth0"); err != nil {
			return
		}
		for i := range n {
			src := netip.AddrFrom4([4]byte{base[0], base[1], base[2], byte(100 + i)})
			ipn := &net.IPNet{IP: net.IP(src.AsSlice()), Mask: net.CIDRMask(24, 32)}
			if err = netlink.AddrAdd(l, &netlink.Addr{IPNet: ipn}); err != nil {
				err = fmt.Errorf("adding %v: %w", src, err)
				return
			}
			out = append(out, src)
		}
	})
	must(t, err)
	return out
}

// tcpFromEach opens n connections to addr from each of sources, a few at
// once, and returns the replies. A connection that fails fails the test.
func (h *host) tcpFromEach(t *testing.T, sources []netip.Addr, addr netip.AddrPort, n int) []reply {
	t.Helper()
	var (
		mu   sync.Mutex
		out  []reply
		errs []error
		wg   sync.WaitGroup
	)
	work := make(chan netip.Addr)
	for range 6 {
		wg.Go(func() {
			for src := range work {
				r, err := h.tcpFrom(t, src, addr)
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("from %v: %w", src, err))
				} else {
					out = append(out, r)
				}
				mu.Unlock()
			}
		})
	}
	for range n {
		for _, src := range sources {
			work <- src
		}
	}
	close(work)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d connections to %v failed, the first: %v", len(errs), n*len(sources), addr, errs[0])
	}
	return out
}

// tcpFrom opens one connection from src, an address of h, to addr and
// reads the reply.
func (h *host) tcpFrom(t *testing.T, src netip.Addr, addr netip.AddrPort) (reply, error) {
	return h.tcpDial(t, &net.Dialer{Timeout: requestTimeout, LocalAddr: &net.TCPAddr{IP: net.IP(src.AsSlice())}}, addr)
}

// countedKit is a nodeKit whose IPVS client counts the requests it is
// asked to send, and whose Observer keeps each SyncEvent's IPVS count.
type countedKit struct {
	*nodeKit
	ipvs *countingIPVS
	mu   sync.Mutex
	ops  []int
}

// countingIPVS counts the requests of every batch it applies.
type countingIPVS struct {
	IPVS
	mu       sync.Mutex
	requests int
}

func (c *countingIPVS) Apply(ctx context.Context, b *ipvs.Batch) error {
	c.mu.Lock()
	c.requests += b.Len()
	c.mu.Unlock()
	return c.IPVS.Apply(ctx, b)
}

func (k *countedKit) ipvsRequests() int {
	k.ipvs.mu.Lock()
	defer k.ipvs.mu.Unlock()
	return k.ipvs.requests
}

// lastOps is the last SyncEvent's IPVS request count.
func (k *countedKit) lastOps() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.ops) == 0 {
		return -1
	}
	return k.ops[len(k.ops)-1]
}

// newCountedProxier is newProxier with the IPVS client wrapped to count,
// and an Observer, as a restarted program would make it.
func (tp *topology) newCountedProxier(t *testing.T, cfg Config) *countedKit {
	t.Helper()
	if tp.mode != VIPAddresses {
		cfg.VIPMode = tp.mode
	}
	k := &countedKit{}
	cfg.Observer = ObserverFunc(func(e Event) {
		if se, ok := e.(*SyncEvent); ok {
			k.mu.Lock()
			k.ops = append(k.ops, se.Ops[SubsystemIPVS])
			k.mu.Unlock()
		}
	})
	d := tp.nodeDeps(t, cfg, iptables.FlavorAuto)
	nk := &nodeKit{ipvs: d.IPVS.(*ipvs.Client), rules: d.Rules}
	k.ipvs = &countingIPVS{IPVS: d.IPVS}
	d.IPVS = k.ipvs
	var err error
	nk.p, err = New(&cfg, d)
	must(t, err)
	k.nodeKit = nk
	return k
}
