package healthcheck

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

// eventWait bounds every wait for an event: generous, for a loaded machine
// and -race; a passing test never waits it out.
const eventWait = 10 * time.Second

// start returns a Checker whose events go to the returned channel, closed
// when the test ends.
func start[K comparable](t *testing.T, cfg Config[K]) (*Checker[K], chan Event[K]) {
	t.Helper()
	events := make(chan Event[K], 1024)
	cfg.Notify = func(ev Event[K]) { events <- ev }
	c, err := New(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, events
}

// next returns the next event, failing t if none comes in time.
func next[K comparable](t *testing.T, events chan Event[K]) Event[K] {
	t.Helper()
	select {
	case ev := <-events:
		return ev
	case <-time.After(eventWait):
		t.Fatalf("no event within %v", eventWait)
		return Event[K]{}
	}
}

// expect reads the next event and checks its key and states.
func expect[K comparable](t *testing.T, events chan Event[K], key K, old, new State) Event[K] {
	t.Helper()
	ev := next(t, events)
	if ev.Key != key || ev.Old != old || ev.New != new {
		t.Fatalf("event %v; want %v: %v -> %v", ev, key, old, new)
	}
	return ev
}

// check returns a Check of typ that decides on each result (Rise = Fall =
// 1), every interval.
func check(typ Type, interval time.Duration) Check {
	return Check{Type: typ, Interval: interval, Timeout: interval, Rise: 1, Fall: 1}
}

// addrOf returns a listener's or a server's address.
func addrOf(t *testing.T, a net.Addr) netip.AddrPort {
	t.Helper()
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	return ap
}

// listen returns a TCP listener on a free loopback port.
func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// closedPort returns a loopback address on which nothing listens (a port
// just released).
func closedPort(t *testing.T) netip.AddrPort {
	t.Helper()
	l := listen(t)
	a := addrOf(t, l.Addr())
	l.Close()
	return a
}

// tcpServer listens on loopback, accepting and closing, until the test ends.
func tcpServer(t *testing.T) net.Listener {
	t.Helper()
	l := listen(t)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l
}

// silentServer accepts connections and never answers, until the test ends.
func silentServer(t *testing.T) net.Listener {
	t.Helper()
	l := listen(t)
	done := make(chan struct{})
	t.Cleanup(func() { close(done); l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { <-done; c.Close() }()
		}
	}()
	return l
}

// first starts a Checker with one target, "x", and returns its first event,
// which must be a change from Unknown to want.
func first(t *testing.T, addr netip.AddrPort, ck Check, want State) Event[string] {
	t.Helper()
	c, events := start(t, Config[string]{})
	if err := c.Set("x", Target{Addr: addr, Check: ck}); err != nil {
		t.Fatal(err)
	}
	return expect(t, events, "x", Unknown, want)
}
