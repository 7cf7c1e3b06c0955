//go:build !linux

package dummy

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
)

type client struct{}

func errOS() error {
	return fmt.Errorf("dummy: dummy links on %s: %w", runtime.GOOS, ErrNotSupported)
}

func newClient(*Config) (*client, error) { return nil, errOS() }

func (*client) close() error                                          { return errOS() }
func (*client) ensure(context.Context, string) (bool, error)          { return false, errOS() }
func (*client) adopt(context.Context, string) error                   { return errOS() }
func (*client) addrs(context.Context, string) ([]netip.Prefix, error) { return nil, errOS() }
func (*client) adoptableAddrs(context.Context, string) ([]netip.Prefix, error) {
	return nil, errOS()
}
func (*client) bind(context.Context, string, netip.Addr) error   { return errOS() }
func (*client) unbind(context.Context, string, netip.Addr) error { return errOS() }
func (*client) delete(context.Context, string) error             { return errOS() }
func (*client) sync(context.Context, string, []netip.Addr) (SyncResult, error) {
	return SyncResult{}, errOS()
}
func (*client) update(context.Context, string, []netip.Addr, []netip.Addr) error { return errOS() }
func (*client) routes(context.Context, string) ([]netip.Addr, error)             { return nil, errOS() }
func (*client) updateRoutes(context.Context, string, []netip.Addr, []netip.Addr) error {
	return errOS()
}
