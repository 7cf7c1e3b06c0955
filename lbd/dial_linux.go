package lbd

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime"

	"github.com/vishvananda/netns"
)

// Dialer opens TCP connections from the network namespace ns (0: the
// caller's). Each connection to another namespace is opened on an OS
// thread of its own, which is thrown away afterwards.
func Dialer(ns netns.NsHandle) func(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
	var d net.Dialer
	if ns == 0 {
		return func(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr.String())
		}
	}
	type result struct {
		c   net.Conn
		err error
	}
	return func(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
		ch := make(chan result, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			if err := netns.Set(ns); err != nil {
				ch <- result{err: fmt.Errorf("lbd: entering the checks' namespace: %w", err)}
				return
			}
			c, err := d.DialContext(ctx, "tcp", addr.String())
			ch <- result{c, err}
		}()
		r := <-ch
		return r.c, r.err
	}
}
