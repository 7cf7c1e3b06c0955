package ipvs

import "context"

// Interface is the set of Client methods, for code that wants to run against
// the kernel or an in-memory fake (package ipvstest) alike. Its method set is
// stable; consumers that need less should declare a smaller interface.
type Interface interface {
	AddService(ctx context.Context, s Service) error
	UpdateService(ctx context.Context, s Service) error
	DeleteService(ctx context.Context, k ServiceKey) error
	GetService(ctx context.Context, k ServiceKey) (ServiceInfo, error)
	Services(ctx context.Context) ([]ServiceInfo, error)

	AddDestination(ctx context.Context, k ServiceKey, d Destination) error
	UpdateDestination(ctx context.Context, k ServiceKey, d Destination) error
	DeleteDestination(ctx context.Context, k ServiceKey, d DestinationKey) error
	Destinations(ctx context.Context, k ServiceKey) ([]DestinationInfo, error)

	Snapshot(ctx context.Context) (Snapshot, error)
	Apply(ctx context.Context, b *Batch) error

	Timeouts(ctx context.Context) (Timeouts, error)
	SetTimeouts(ctx context.Context, t Timeouts) error
	Info(ctx context.Context) (Info, error)

	Daemons(ctx context.Context) ([]Daemon, error)
	StartDaemon(ctx context.Context, d Daemon) error
	StopDaemon(ctx context.Context, state DaemonState) error

	ZeroService(ctx context.Context, k ServiceKey) error
	ZeroAll(ctx context.Context) error
	Flush(ctx context.Context) error
}
