//go:build !linux

package netnstest

import (
	"context"
	"net/netip"
	"runtime"
	"testing"

	"github.com/vishvananda/netns"
)

// NS is a network namespace; they exist only on Linux.
type NS struct{}

// New skips tb: network namespaces exist only on Linux.
func New(tb testing.TB) *NS {
	tb.Helper()
	tb.Skipf("netnstest: network namespaces exist only on Linux, not %s", runtime.GOOS)
	return nil
}

// The rest is never reached: New has skipped the test.

func (ns *NS) Handle() netns.NsHandle                                { return -1 }
func (ns *NS) Do(tb testing.TB, f func())                            { tb.Helper(); tb.FailNow() }
func (ns *NS) Sysctl(tb testing.TB, key, value string)               { tb.Helper(); tb.FailNow() }
func (ns *NS) Route(tb testing.TB, dst netip.Prefix, via netip.Addr) { tb.Helper(); tb.FailNow() }

func (ns *NS) Run(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	tb.FailNow()
	return ""
}

func Link(tb testing.TB, a *NS, aName string, aAddr netip.Prefix, b *NS, bName string, bAddr netip.Prefix) {
	tb.Helper()
	tb.FailNow()
}

func (ns *NS) Peer(tb testing.TB, name string, nsAddr, addr netip.Prefix) *NS {
	tb.Helper()
	tb.FailNow()
	return nil
}

func (ns *NS) ServeTCP(tb testing.TB, addr netip.AddrPort, reply string) *Server {
	tb.Helper()
	tb.FailNow()
	return nil
}

func (ns *NS) ServeUDP(tb testing.TB, addr netip.AddrPort, reply string) *Server {
	tb.Helper()
	tb.FailNow()
	return nil
}

func (ns *NS) DialTCP(ctx context.Context, tb testing.TB, addr netip.AddrPort) (string, error) {
	tb.Helper()
	tb.FailNow()
	return "", nil
}

func (ns *NS) DialUDP(ctx context.Context, tb testing.TB, addr netip.AddrPort) (string, error) {
	tb.Helper()
	tb.FailNow()
	return "", nil
}
