package lbd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netns"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/netnstest"
)

// The VM test's timing: checks every second, two in a row decide.
const (
	vmInterval = time.Second
	vmRise     = 2
	vmFall     = 2
)

const vmConfig = `virtualServers:
  web:
    address: 198.18.100.1
    port: 80
    scheduler: wrr
    healthCheck: {type: tcp, port: 9000, interval: 1s, timeout: 500ms, rise: 2, fall: 2}
    realServers:
      - {address: 198.18.11.2, port: 8080}
      - {address: 198.18.12.2, port: 8080}
      - {address: 198.18.13.2, port: 8080, weight: 1}
`

// TestIntegrationDaemon runs the daemon (Serve, as ipvskit-lb does) in a
// node namespace with three backends in theirs and a client loop through
// the VIP: a backend whose health port stops gets no new connections
// within fall x interval + one interval and comes back within rise x
// interval + one interval of its recovery, no request fails throughout,
// a reload of one weight sends one IPVS request, a bad file is refused,
// SIGTERM leaves the node serving, and another program's virtual server
// is never touched.
func TestIntegrationDaemon(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := netnstest.New(t)
	testutil.Require(t, "IPVS", func() error {
		c, err := ipvs.New(&ipvs.Config{NetNS: node.Handle()})
		if err == nil {
			c.Close()
		}
		return err
	})
	node.Sysctl(t, "net/ipv4/ip_forward", "1")
	client := node.Peer(t, "client", netip.MustParsePrefix("198.18.0.1/24"), netip.MustParsePrefix("198.18.0.2/24"))
	var backends []*backend
	for i, name := range []string{"b1", "b2", "b3"} {
		ns := node.Peer(t, name, netip.MustParsePrefix("198.18.1"+string(rune('1'+i))+".1/24"), netip.MustParsePrefix("198.18.1"+string(rune('1'+i))+".2/24"))
		backends = append(backends, startBackend(t, ns, name, netip.MustParseAddr("198.18.1"+string(rune('1'+i))+".2")))
	}
	// Another program's virtual server, on one of the backends.
	node.Run(t, "ipvsadm", "-A", "-t", "198.18.100.9:80", "-s", "rr")
	node.Run(t, "ipvsadm", "-a", "-t", "198.18.100.9:80", "-r", "198.18.11.2:8080", "-m", "-w", "5")
	foreign := foreignLines(node.Run(t, "ipvsadm", "-Sn"))

	path := filepath.Join(t.TempDir(), "lb.yaml")
	writeFile(t, path, vmConfig)
	reg := prometheus.NewRegistry()
	hup := make(chan os.Signal, 1)
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- Serve(sctx, path, &ServeOptions{NetNS: node.Handle(), Registry: reg, Reload: hup,
			Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	}()
	defer func() { stop(); <-served }()

	vip := netip.MustParseAddrPort("198.18.100.1:80")
	waitFor(t, ctx, "the VIP answers", func() bool { _, err := dialIn(ctx, client.Handle(), vip); return err == nil })
	loop := startClient(t, client.Handle(), vip)
	for _, b := range backends {
		waitFor(t, ctx, "each backend served through the VIP: "+b.name, func() bool { return b.since(time.Time{}) > 0 })
	}

	// A backend's health port stops: no new connections after fall x
	// interval + one interval.
	b1 := backends[0]
	t0 := time.Now()
	b1.stopHealth()
	window := time.Duration(vmFall+1) * vmInterval
	waitFor(t, ctx, "the other backends serve after the window", func() bool {
		return time.Since(t0) > window+vmInterval && backends[1].since(t0.Add(window)) > 0
	})
	if last := b1.last(); last.Sub(t0) > window {
		t.Errorf("b1 got a new connection %v after its health port stopped, want within %v", last.Sub(t0), window)
	}
	// It recovers: back within rise x interval + one interval.
	t1 := time.Now()
	b1.startHealth(t)
	waitFor(t, ctx, "b1 serves again", func() bool { return b1.since(t1) > 0 })
	if first := b1.first(t1); first.Sub(t1) > time.Duration(vmRise+1)*vmInterval {
		t.Errorf("b1 took %v to get a connection after it recovered, want within %v", first.Sub(t1), time.Duration(vmRise+1)*vmInterval)
	}

	// A reload that changes one weight sends one IPVS request.
	before := metricValue(t, reg, "ipvskit_lb_ipvs_requests_total", "")
	writeFile(t, path, strings.Replace(vmConfig, "weight: 1}", "weight: 2}", 1))
	hup <- os.Interrupt
	waitFor(t, ctx, "the reload", func() bool { return metricValue(t, reg, "ipvskit_lb_reloads_total", "success") == 1 })
	if sent := metricValue(t, reg, "ipvskit_lb_ipvs_requests_total", "") - before; sent != 1 {
		t.Errorf("a reload of one weight sent %v IPVS requests, want 1", sent)
	}
	if save := node.Run(t, "ipvsadm", "-Sn"); !strings.Contains(save, "-r 198.18.13.2:8080 -m -w 2") {
		t.Errorf("weight not changed in the kernel:\n%s", save)
	}
	// A bad file is refused and the running configuration kept.
	writeFile(t, path, "virtualServers:\n  web: {address: 198.18.100.x, port: 80}\n")
	hup <- os.Interrupt
	waitFor(t, ctx, "the refused reload", func() bool { return metricValue(t, reg, "ipvskit_lb_reloads_total", "refused") == 1 })
	if sent := metricValue(t, reg, "ipvskit_lb_ipvs_requests_total", "") - before; sent != 1 {
		t.Errorf("a refused reload sent %v IPVS requests", sent-1)
	}
	if up := metricValue(t, reg, "ipvskit_lb_real_server_up", "198.18.11.2:8080"); up != 1 {
		t.Errorf("ipvskit_lb_real_server_up of b1 = %v, want 1", up)
	}
	since := time.Now()
	waitFor(t, ctx, "every backend serves after the reloads", func() bool {
		return backends[0].since(since) > 0 && backends[1].since(since) > 0 && backends[2].since(since) > 0
	})
	ok, failed := loop.stop()
	if failed != 0 || ok == 0 {
		t.Errorf("client loop: %d requests succeeded, %d failed; want none failed", ok, failed)
	}

	// SIGTERM (the context) leaves the node serving.
	stop()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	served <- nil
	if _, err := dialIn(ctx, client.Handle(), vip); err != nil {
		t.Errorf("after the daemon stopped the VIP does not answer: %v", err)
	}
	// -cleanup removes what it owns, and only that.
	if err := Cleanup(ctx, path+".orig", node.Handle()); err == nil {
		t.Errorf("Cleanup of a missing file succeeded")
	}
	writeFile(t, path, vmConfig)
	if err := Cleanup(ctx, path, node.Handle()); err != nil {
		t.Fatal(err)
	}
	save := node.Run(t, "ipvsadm", "-Sn")
	if strings.Contains(save, "198.18.100.1") {
		t.Errorf("cleanup left the daemon's virtual server:\n%s", save)
	}
	if got := foreignLines(save); got != foreign {
		t.Errorf("another program's virtual server changed:\n%s\nwant\n%s", got, foreign)
	}
}

// backend is a backend namespace with an app server on 8080, which
// replies with its name and records when each connection came, and a
// health port, 9000, that the test stops and starts.
type backend struct {
	ns     *netnstest.NS
	name   string
	addr   netip.Addr
	mu     sync.Mutex
	conns  []time.Time
	health net.Listener
}

func startBackend(t *testing.T, ns *netnstest.NS, name string, addr netip.Addr) *backend {
	b := &backend{ns: ns, name: name, addr: addr}
	app := b.listen(t, 8080)
	t.Cleanup(func() { app.Close() })
	go func() {
		for {
			c, err := app.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, time.Now())
			b.mu.Unlock()
			c.Write([]byte(name))
			c.Close()
		}
	}()
	b.startHealth(t)
	return b
}

func (b *backend) listen(t *testing.T, port uint16) net.Listener {
	var ln net.Listener
	var err error
	b.ns.Do(t, func() { ln, err = net.Listen("tcp", netip.AddrPortFrom(b.addr, port).String()) })
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func (b *backend) startHealth(t *testing.T) {
	ln := b.listen(t, 9000)
	b.mu.Lock()
	b.health = ln
	b.mu.Unlock()
	t.Cleanup(func() { ln.Close() })
	go accept(ln)
}

func (b *backend) stopHealth() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.health.Close()
}

// since counts the connections after t.
func (b *backend) since(t time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.conns {
		if c.After(t) {
			n++
		}
	}
	return n
}

func (b *backend) last() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.conns[len(b.conns)-1]
}

func (b *backend) first(after time.Time) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		if c.After(after) {
			return c
		}
	}
	return time.Time{}
}

// clientLoop sends requests to the VIP one after another, counting those
// that succeed and those that fail.
type clientLoop struct {
	done         chan struct{}
	finished     chan struct{}
	ok, failures int
}

func startClient(t *testing.T, ns netns.NsHandle, vip netip.AddrPort) *clientLoop {
	l := &clientLoop{done: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		defer close(l.finished)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := netns.Set(ns); err != nil {
			t.Error(err)
			return
		}
		for {
			select {
			case <-l.done:
				return
			default:
			}
			if _, err := request(context.Background(), vip); err != nil {
				l.failures++
				t.Logf("request failed: %v", err)
			} else {
				l.ok++
			}
			time.Sleep(20 * time.Millisecond) // pacing, not synchronisation
		}
	}()
	t.Cleanup(func() { l.stop() })
	return l
}

func (l *clientLoop) stop() (ok, failures int) {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	<-l.finished
	return l.ok, l.failures
}

func request(ctx context.Context, addr netip.AddrPort) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr.String())
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	b, err := io.ReadAll(c)
	if err == nil && len(b) == 0 {
		err = errors.New("empty reply")
	}
	return string(b), err
}

// dialIn sends one request from the namespace ns, on an OS thread of
// its own that is thrown away afterwards.
func dialIn(ctx context.Context, ns netns.NsHandle, addr netip.AddrPort) (string, error) {
	type result struct {
		reply string
		err   error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := netns.Set(ns); err != nil {
			ch <- result{err: err}
			return
		}
		reply, err := request(ctx, addr)
		ch <- result{reply, err}
	}()
	r := <-ch
	return r.reply, r.err
}

func accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// metricValue is the value of the series of name whose one label value
// (any label) is label, or of its only series when label is "".
func metricValue(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := label == ""
			for _, lp := range m.GetLabel() {
				match = match || lp.GetValue() == label
			}
			if !match {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// foreignLines are the lines of ipvsadm -Sn about 198.18.100.9.
func foreignLines(save string) string {
	var out []string
	for _, l := range strings.Split(save, "\n") {
		if strings.Contains(l, "198.18.100.9") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
