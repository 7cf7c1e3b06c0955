//go:build !linux

package lbd

import (
	"context"
	"errors"
	"net"
	"net/netip"

	"github.com/vishvananda/netns"
)

// Dialer opens TCP connections from the caller's network namespace; off
// Linux there is no other (ns must be 0).
func Dialer(ns netns.NsHandle) func(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
		if ns != 0 {
			return nil, errors.New("lbd: network namespaces exist only on Linux")
		}
		return d.DialContext(ctx, "tcp", addr.String())
	}
}
