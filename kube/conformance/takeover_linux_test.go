package conformance

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
)

// takeoverServices is how many Services the taken-over node serves.
const takeoverServices = 12

// takeoverStep is the node's state: ClusterIP and NodePort Services with
// two endpoints each, serving the backends' request port (80) and their
// long-lived echo port (82), the second also on the node's own address as
// an external IP; with extra, the first Service has a third endpoint.
func takeoverStep(extra bool) step {
	var objs []any
	for i := range takeoverServices {
		a := alloc{k: 100 + i}
		opts := []func(*v1.Service){http, port("echo", v1.ProtocolTCP, 82, echoPort)}
		if i%2 == 1 {
			opts = append(opts, a.typ(v1.ServiceTypeNodePort))
		}
		if i == 1 {
			opts = append(opts, externalIPs(nodeAddr)) // the node's own address: served, bound by neither
		}
		name := fmt.Sprintf("svc-%d", i)
		eps := []ep{ready(1+i%4, ""), ready(1+(i+1)%4, "")}
		if extra && i == 0 {
			eps = append(eps, ready(3, ""))
		}
		objs = append(objs, a.svc(name, opts...),
			slice(name, "a", false, []sport{httpP, {"echo", v1.ProtocolTCP, echoPort}}, eps...))
	}
	return st(objs...)
}

// TestTakeOverAKubeProxyNode: kube-proxy configures a node and serves live
// traffic (a loop of requests to every Service and long-lived connections);
// kube-proxy stops; a Proxier with kube-proxy's names and AdoptKubeProxy
// previews the take-over (empty: no blip), then syncs the same Services:
// nothing in IPVS or on the VIP link is added, deleted or made again, and
// the iptables rules are rewritten in place. Then
// an endpoint is added, and the Proxier moves to the nftables back end,
// which removes kube-proxy's chains and sets only once its own rules are in.
// Not one request fails, and every long-lived connection lives through it.
func TestTakeOverAKubeProxyNode(t *testing.T) {
	r := newRig(t)
	s := takeoverStep(false)
	kp := newKubeProxy(t, r, s)
	tr := startTraffic(t, r, s)
	tr.wait(t, "kube-proxy serving")

	kp.stop(t)
	before := readState(t, r)
	tr.wait(t, "kube-proxy stopped")

	ik := newIPVSKitAdopting(t, r, proxier.IPTables, true)
	// The no-blip take-over previews as empty.
	st := ik.state(t, s)
	tp, err := ik.p.PreviewTakeover(context.Background(), &st)
	must(t, err)
	if !tp.Empty() {
		t.Errorf("the take-over's preview lists changes:\n%s", tp)
	}
	res := ik.sync(t, s)
	var made []string
	for _, op := range append(res.Plan.IPVSAdd.Ops(), res.Plan.IPVSDelete.Ops()...) {
		switch op.Kind {
		case ipvs.OpUpdateService, ipvs.OpUpdateDestination:
			t.Logf("takeover updated in place: %v", op)
		default:
			made = append(made, fmt.Sprintf("%v", op))
		}
	}
	if len(made) > 0 || len(res.Plan.Bind) > 0 || len(res.Plan.Unbind) > 0 {
		t.Errorf("the takeover sync made or deleted IPVS objects %v, bound %v, unbound %v; want none", made, res.Plan.Bind, res.Plan.Unbind)
	}
	after := readState(t, r)
	if d := diff(before.ipvs, after.ipvs); len(d) > 0 {
		t.Errorf("IPVS changed in the takeover:\n%s", strings.Join(d, "\n"))
	}
	if d := diff(before.vips, after.vips); len(d) > 0 {
		t.Errorf("VIPs changed in the takeover:\n%s", strings.Join(d, "\n"))
	}
	for _, tool := range []string{"iptables-save", "ip6tables-save"} {
		for _, l := range lines(r.node.Exec(t, tool)) {
			if strings.HasPrefix(l, "-A ") && !strings.HasPrefix(l, "-A KUBE-") && strings.Contains(l, " -j KUBE-") && !strings.Contains(l, "ipvskit:ipvskit") {
				t.Errorf("%s: kube-proxy's jump rule is left beside ipvskit's: %s", tool, l)
			}
		}
	}
	tr.wait(t, "ipvskit took over")

	changed := takeoverStep(true)
	ik.apply(t, changed)
	tr.wait(t, "an endpoint added")

	nft := newIPVSKitAdopting(t, r, proxier.NFTables, false)
	nft.apply(t, changed)
	tr.wait(t, "moved to nftables")
	final := readState(t, r)
	for _, l := range append(final.iptables, final.ipsets...) {
		if strings.Contains(l, "KUBE-") {
			t.Errorf("after the move to nftables, iptables or ipset still has %s", l)
		}
	}
	if out := r.node.Exec(t, "nft", "list", "table", "ip", "kube-proxy"); !strings.Contains(out, "ipvskit:ipvskit") {
		t.Errorf("nft table kube-proxy lacks the mark:\n%s", out)
	}
	tr.stop(t)
}

// TestHandANodeBackToKubeProxy: the way back. kube-proxy configures the
// node, ipvskit takes it over (iptables back end) and applies a change, then
// stops without Cleanup, and kube-proxy starts again on the node with the
// same Services: its first sync writes nothing to IPVS (it finds every
// virtual server and destination as it wants them), and no request or
// long-lived connection fails through any of it. What ipvskit leaves beside
// kube-proxy is listed in docs/takeover.md.
func TestHandANodeBackToKubeProxy(t *testing.T) {
	r := newRig(t)
	s := takeoverStep(false)
	kp := newKubeProxy(t, r, s)
	tr := startTraffic(t, r, s)
	tr.wait(t, "kube-proxy serving")
	kp.stop(t)

	ik := newIPVSKitAdopting(t, r, proxier.IPTables, true)
	ik.apply(t, s)
	changed := takeoverStep(true)
	ik.apply(t, changed)
	tr.wait(t, "ipvskit serving")

	back := newKubeProxy(t, r, changed)
	if c := back.last.Calls; c.IPVS != 0 {
		t.Errorf("kube-proxy's first sync on ipvskit's node made %d IPVS writes, want 0", c.IPVS)
	}
	tr.wait(t, "kube-proxy serving again")
	tr.stop(t)
}

// traffic is a client loop of requests to every cluster IP and node port of
// a step, round after round, and long-lived connections to the echo port.
type traffic struct {
	cancel context.CancelFunc
	done   chan struct{}
	rounds atomic.Int64
	mu     sync.Mutex
	fails  []string
	phase  string
	conns  []*echoConn
	round  chan struct{} // closed when the current round ends
}

// roundEnd is the channel the current round closes.
func (tr *traffic) roundEnd() <-chan struct{} {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.round
}

type echoConn struct {
	c  net.Conn
	rd *bufio.Reader
}

func startTraffic(t *testing.T, r *rig, s step) *traffic {
	t.Helper()
	return startTrafficExcept(t, r, s, netip.AddrPort{})
}

// startTrafficExcept is startTraffic without requests to skip.
func startTrafficExcept(t *testing.T, r *rig, s step, skip netip.AddrPort) *traffic {
	t.Helper()
	var targets []netip.AddrPort
	for _, p := range probesOf(s) {
		if p.network == "tcp" && strings.Contains(p.name, ":http ") && p.dst != skip {
			targets = append(targets, p.dst)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	tr := &traffic{cancel: cancel, done: make(chan struct{}), phase: "start", round: make(chan struct{})}
	// Three long-lived connections, to the first three Services' echo port.
	r.client.Do(t, func() {
		for i := range 3 {
			c, err := net.DialTimeout("tcp", netip.AddrPortFrom(netip.MustParseAddr(alloc{k: 100 + i}.clusterIP()), 82).String(), 5*time.Second)
			if err != nil {
				t.Fatalf("long-lived connection %d: %v", i, err)
			}
			tr.conns = append(tr.conns, &echoConn{c: c, rd: bufio.NewReader(c)})
		}
	})
	tr.echo(t, "start")
	src := netip.AddrPortFrom(netip.MustParseAddr(clientAddr), 0)
	go func() {
		defer close(tr.done)
		r.client.Do(t, func() {
			for ctx.Err() == nil {
				for _, dst := range targets {
					if res := exchange("tcp", src, dst, 3*time.Second); !strings.HasPrefix(res, "b") {
						tr.mu.Lock()
						tr.fails = append(tr.fails, fmt.Sprintf("%s: %s: %s", tr.phase, dst, res))
						tr.mu.Unlock()
					}
				}
				tr.rounds.Add(1)
				tr.mu.Lock()
				close(tr.round)
				tr.round = make(chan struct{})
				tr.mu.Unlock()
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-tr.done })
	return tr
}

// wait lets the loop finish two whole rounds after the phase named starts
// (so every target was tried in it), checks the long-lived connections,
// and reports failures so far.
func (tr *traffic) wait(t *testing.T, phase string) {
	t.Helper()
	tr.mu.Lock()
	tr.phase = phase
	tr.mu.Unlock()
	limit := time.NewTimer(5 * time.Minute)
	defer limit.Stop()
	for range 2 {
		select {
		case <-tr.roundEnd():
		case <-tr.done:
			t.Fatalf("%s: the request loop ended", phase)
		case <-limit.C:
			t.Fatalf("%s: the request loop did not finish two rounds in 5 minutes", phase)
		}
	}
	tr.echo(t, phase)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.fails) > 0 {
		t.Errorf("requests failed by %s:\n%s", phase, strings.Join(tr.fails, "\n"))
		tr.fails = nil
	}
}

// echo sends a line on every long-lived connection and reads it back.
func (tr *traffic) echo(t *testing.T, phase string) {
	t.Helper()
	for i, ec := range tr.conns {
		ec.c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := fmt.Fprintf(ec.c, "%s\n", strings.ReplaceAll(phase, " ", "-")); err != nil {
			t.Fatalf("%s: long-lived connection %d: %v", phase, i, err)
		}
		l, err := ec.rd.ReadString('\n')
		if err != nil || !strings.HasSuffix(strings.TrimSpace(l), strings.ReplaceAll(phase, " ", "-")) {
			t.Fatalf("%s: long-lived connection %d answered %q, %v", phase, i, l, err)
		}
	}
}

func (tr *traffic) stop(t *testing.T) {
	t.Helper()
	tr.cancel()
	<-tr.done
	for _, ec := range tr.conns {
		ec.c.Close()
	}
}
