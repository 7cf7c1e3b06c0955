//go:build !linux

package ipvs

import (
	"context"
	"fmt"
	"runtime"
)

// client is a stub: IPVS exists only on Linux. New fails, so no method below
// is ever reached through a Client.
type client struct{}

var errOS = fmt.Errorf("ipvs on %s: %w", runtime.GOOS, ErrNotSupported)

func newClient(*Config) (*client, error) { return nil, errOS }

func (*client) close() error                                     { return errOS }
func (*client) serviceOp(context.Context, OpKind, Service) error { return errOS }
func (*client) getService(context.Context, ServiceKey) (ServiceInfo, error) {
	return ServiceInfo{}, errOS
}
func (*client) services(context.Context) ([]ServiceInfo, error) { return nil, errOS }
func (*client) destOp(context.Context, OpKind, ServiceKey, Destination) error {
	return errOS
}
func (*client) destinations(context.Context, ServiceKey) ([]DestinationInfo, error) {
	return nil, errOS
}
func (*client) snapshot(context.Context) (Snapshot, error)    { return Snapshot{}, errOS }
func (*client) apply(context.Context, *Batch) error           { return errOS }
func (*client) timeouts(context.Context) (Timeouts, error)    { return Timeouts{}, errOS }
func (*client) setTimeouts(context.Context, Timeouts) error   { return errOS }
func (*client) info(context.Context) (Info, error)            { return Info{}, errOS }
func (*client) daemons(context.Context) ([]Daemon, error)     { return nil, errOS }
func (*client) startDaemon(context.Context, Daemon) error     { return errOS }
func (*client) stopDaemon(context.Context, DaemonState) error { return errOS }
func (*client) zero(context.Context, *ServiceKey) error       { return errOS }
func (*client) flush(context.Context) error                   { return errOS }
