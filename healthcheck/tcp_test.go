package healthcheck

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

func TestTCPUpAndRefused(t *testing.T) {
	c, events := start(t, Config[string]{})
	l := tcpServer(t)
	if err := c.Set("up", Target{Addr: addrOf(t, l.Addr()), Check: check(TCP, time.Second)}); err != nil {
		t.Fatal(err)
	}
	ev := expect(t, events, "up", Unknown, Up)
	if ev.Err != nil || ev.Addr != addrOf(t, l.Addr()) || ev.Time.IsZero() {
		t.Errorf("event %+v: want no error, the address and a time", ev)
	}
	if err := c.Set("down", Target{Addr: closedPort(t), Check: check(TCP, time.Second)}); err != nil {
		t.Fatal(err)
	}
	ev = expect(t, events, "down", Unknown, Down)
	var op *net.OpError
	if !errors.As(ev.Err, &op) || !errors.Is(ev.Err, syscall.ECONNREFUSED) {
		t.Errorf("error %v: want a *net.OpError wrapping ECONNREFUSED", ev.Err)
	}
	if s, ok := c.State("up"); !ok || s != Up {
		t.Errorf("State(up) = %v, %v; want up, true", s, ok)
	}
}
