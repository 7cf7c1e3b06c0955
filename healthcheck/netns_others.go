//go:build !linux

package healthcheck

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime"

	"github.com/ipvskit/ipvskit/inet"
)

// nsSockets would open sockets in another network namespace; there are
// none on this system.
type nsSockets struct{}

func openNS(int) (*nsSockets, error) {
	return nil, fmt.Errorf("healthcheck: network namespaces on %s: %w", runtime.GOOS, inet.ErrNotSupported)
}

func (*nsSockets) close() {}

func (*nsSockets) dial(context.Context, string, netip.AddrPort) (net.Conn, error) {
	return nil, fmt.Errorf("healthcheck: network namespaces on %s: %w", runtime.GOOS, inet.ErrNotSupported)
}
