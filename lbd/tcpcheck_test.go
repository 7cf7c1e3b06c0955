package lbd

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestTCPCheckerRiseAndFall: a listener that closes makes its target
// down after fall failures, and up again after rise successes.
func TestTCPCheckerRiseAndFall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.MustParseAddrPort(ln.Addr().String())
	go accept(ln)
	events := make(chan Event, 10)
	observed := make(chan error, 100)
	c, err := TCPChecker(Dialer(0))(func(ev Event) { events <- ev }, func(_ Key, _ time.Duration, err error) {
		select {
		case observed <- err:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	k := Key{"web", addr}
	ck := Check{Type: CheckTCP, Interval: 20 * time.Millisecond, Timeout: 20 * time.Millisecond, Rise: 2, Fall: 3}
	if err := c.Replace(map[Key]Target{k: {Addr: addr, Check: ck}}); err != nil {
		t.Fatal(err)
	}
	want := func(up bool) {
		t.Helper()
		select {
		case ev := <-events:
			if ev.Key != k || ev.Up != up {
				t.Fatalf("event %+v, want up=%v", ev, up)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no event up=%v", up)
		}
	}
	want(true)
	if err := <-observed; err != nil {
		t.Errorf("first check observed %v", err)
	}
	ln.Close()
	want(false)
	ln, err = net.Listen("tcp", addr.String())
	if err != nil {
		t.Skipf("port taken again: %v", err)
	}
	defer ln.Close()
	go accept(ln)
	want(true)
	// Replace without the target stops it: no more events.
	if err := c.Replace(nil); err != nil {
		t.Fatal(err)
	}
	ln.Close()
	select {
	case ev := <-events:
		t.Errorf("event %+v after the target was removed", ev)
	case <-time.After(200 * time.Millisecond):
	}
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
