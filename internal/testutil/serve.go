package testutil

import (
	"net"
	"testing"
)

// Serve listens on network ("tcp", "tcp4", "tcp6") and addr inside ns (the
// socket stays in ns whatever thread later uses it) and hands each
// connection it accepts to handle, on a goroutine of its own, closing the
// connection when handle returns; it stops accepting when tb ends. It
// returns the address bound (addr may ask for port 0).
func (ns *NetNS) Serve(tb testing.TB, network, addr string, handle func(net.Conn)) net.Addr {
	tb.Helper()
	var (
		ln  net.Listener
		err error
	)
	ns.Do(tb, func() { ln, err = net.Listen(network, addr) })
	if err != nil {
		tb.Fatalf("listening on %s %s in the test netns: %v", network, addr, err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr()
}
