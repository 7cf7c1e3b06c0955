package ipvs

import (
	"context"

	"github.com/ipvskit/ipvskit/internal/kerr"
	"github.com/ipvskit/ipvskit/internal/nsfd"

	"github.com/vishvananda/netns"
)

// Config configures a Client. The zero value (or a nil *Config) means
// defaults.
type Config struct {
	// NetNS is the network namespace to manage, chosen once at New: 0
	// means the namespace of the thread that calls New; a positive value
	// is a file descriptor of the namespace, which New duplicates (the
	// caller may close theirs as soon as New returns); a negative value,
	// netns.None() included, makes New fail with a *ValidationError. A
	// socket the Client replaces is opened in the same namespace.
	NetNS netns.NsHandle
}

// Client talks to the kernel's IPVS over generic netlink, in one network
// namespace. It is safe for use from many goroutines; requests run one at a
// time on its socket (Snapshot's destination dumps run on a few sockets of
// their own). Every method that talks to the kernel takes a context
// whose deadline and cancellation bound the call; a call cut short that way
// returns an error wrapping ctx.Err(), and the Client replaces its socket
// (replies may still be queued on it) before the next call.
// Its errors are as the package documentation says (Errors).
type Client struct {
	c      *client
	probes kerr.Probes // each feature's answer in this namespace
}

var _ Interface = (*Client)(nil)

// New opens a Client. It fails with an error wrapping ErrNotSupported when
// the kernel has no IPVS (module ip_vs not loaded) or the system is not
// Linux, and with a *ValidationError for an invalid cfg.NetNS, before it
// opens anything.
func New(cfg *Config) (*Client, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if v, reason, ok := nsfd.Check(int(cfg.NetNS)); !ok {
		return nil, &ValidationError{Field: "Config.NetNS", Value: v, Reason: reason}
	}
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{c: c}, nil
}

// Close releases the Client's socket. Calls after Close fail.
func (c *Client) Close() error {
	err := c.c.close()
	c.probes.Forget() // a closed Client's probe fails, as its other calls do
	return err
}

// AddService creates a service (ipvsadm -A). A service with the same key
// already existing is an error wrapping fs.ErrExist; a scheduler or
// persistence engine the kernel cannot load, an *UnavailableError naming its
// module, which wraps ErrNotSupported (not fs.ErrNotExist).
func (c *Client) AddService(ctx context.Context, s Service) error {
	return c.c.serviceOp(ctx, OpAddService, s)
}

// UpdateService changes a service's scheduler, flags and persistence
// (ipvsadm -E). A missing service is a *NoServiceError, which wraps
// fs.ErrNotExist; a scheduler or persistence engine the kernel cannot load,
// an *UnavailableError (ErrNotSupported).
func (c *Client) UpdateService(ctx context.Context, s Service) error {
	return c.c.serviceOp(ctx, OpUpdateService, s)
}

// DeleteService deletes a service and its destinations (ipvsadm -D). A
// missing service is a *NoServiceError, which wraps fs.ErrNotExist.
func (c *Client) DeleteService(ctx context.Context, k ServiceKey) error {
	return c.c.serviceOp(ctx, OpDeleteService, keyService(k))
}

// GetService returns one service with its counters. A missing service is a
// *NoServiceError, which wraps fs.ErrNotExist.
func (c *Client) GetService(ctx context.Context, k ServiceKey) (ServiceInfo, error) {
	return c.c.getService(ctx, k)
}

// Services returns every service of the namespace with its counters. The
// kernel's dump of a large table comes in parts and resumes by position in a
// table all namespaces share, so deletions in another namespace can make it
// skip services of this one: a dump of more than one part is read again
// while a reading brings a service the earlier ones lacked (at most four
// readings), and services are listed once each.
func (c *Client) Services(ctx context.Context) ([]ServiceInfo, error) {
	return c.c.services(ctx)
}

// AddDestination adds d to the service k (ipvsadm -a). A destination with the
// same address and port already in the service is an error wrapping
// fs.ErrExist; a missing service a *NoServiceError, which wraps
// fs.ErrNotExist.
func (c *Client) AddDestination(ctx context.Context, k ServiceKey, d Destination) error {
	return c.c.destOp(ctx, OpAddDestination, k, d)
}

// UpdateDestination changes d's forwarding method, weight, thresholds and
// tunnel settings in service k, in place (ipvsadm -e). A missing service (a
// *NoServiceError) or destination is an error wrapping fs.ErrNotExist.
func (c *Client) UpdateDestination(ctx context.Context, k ServiceKey, d Destination) error {
	return c.c.destOp(ctx, OpUpdateDestination, k, d)
}

// DeleteDestination removes a destination from service k (ipvsadm -d). A
// missing service (a *NoServiceError) or destination is an error wrapping
// fs.ErrNotExist.
func (c *Client) DeleteDestination(ctx context.Context, k ServiceKey, d DestinationKey) error {
	return c.c.destOp(ctx, OpDeleteDestination, k, Destination{Addr: d.Addr, Port: d.Port})
}

// Destinations returns the destinations of service k with their connection
// counts and counters. As in the kernel, a missing service has none: the
// result is empty, not an error.
func (c *Client) Destinations(ctx context.Context, k ServiceKey) ([]DestinationInfo, error) {
	return c.c.destinations(ctx, k)
}

// Snapshot returns every service with its destinations, in the kernel's
// order: one service listing (as Services reads it), then one destination
// dump per service (the kernel has no single dump of everything), run over
// sockets of their own that the Client keeps for the next Snapshot. It is
// not atomic: changes made meanwhile by others may show in part (a service
// deleted between the two steps is listed without destinations). A failed
// destination dump is an *Error naming its service; a ctx cancelled stops it
// between requests.
func (c *Client) Snapshot(ctx context.Context) (Snapshot, error) {
	return c.c.snapshot(ctx)
}

// Apply sends a batch: its requests packed many to a sendmsg (up to 1,024,
// bounded by the socket buffers), with one kernel ack per send. It returns
// nil when every request succeeded, b.Err() (sending nothing) when a request
// was invalid, and otherwise a *BatchError listing each failed request with
// its error; the other requests were applied. Each failed request's error
// is what the single call would return (an *Error holding, for instance, an
// *UnavailableError or a *NoServiceError).
func (c *Client) Apply(ctx context.Context, b *Batch) error {
	return c.c.apply(ctx, b)
}

// Timeouts returns the TCP, TCP FIN and UDP connection timeouts.
func (c *Client) Timeouts(ctx context.Context) (Timeouts, error) {
	return c.c.timeouts(ctx)
}

// SetTimeouts sets the connection timeouts (ipvsadm --set); zero fields are
// left unchanged.
func (c *Client) SetTimeouts(ctx context.Context, t Timeouts) error {
	return c.c.setTimeouts(ctx, t)
}

// Info returns the IPVS version and connection table size.
func (c *Client) Info(ctx context.Context) (Info, error) {
	return c.c.info(ctx)
}

// Daemons returns the running connection-sync daemons (none, a master, a
// backup, or both).
func (c *Client) Daemons(ctx context.Context) ([]Daemon, error) {
	return c.c.daemons(ctx)
}

// StartDaemon starts a connection-sync daemon (ipvsadm --start-daemon). One
// already running in that role is an error wrapping fs.ErrExist.
func (c *Client) StartDaemon(ctx context.Context, d Daemon) error {
	return c.c.startDaemon(ctx, d)
}

// StopDaemon stops the sync daemon of the given role (ipvsadm
// --stop-daemon). None running in that role is an error wrapping ESRCH
// (fs.ErrNotExist).
func (c *Client) StopDaemon(ctx context.Context, state DaemonState) error {
	return c.c.stopDaemon(ctx, state)
}

// ZeroService zeroes the counters of service k and its destinations
// (ipvsadm -Z -t ...). A missing service is a *NoServiceError, which wraps
// fs.ErrNotExist.
func (c *Client) ZeroService(ctx context.Context, k ServiceKey) error {
	return c.c.zero(ctx, &k)
}

// ZeroAll zeroes the counters of every service and destination (ipvsadm -Z).
func (c *Client) ZeroAll(ctx context.Context) error { return c.c.zero(ctx, nil) }

// Flush deletes every service and destination of the namespace (ipvsadm -C).
// It touches state other programs may own: use it only on a namespace the
// caller owns outright.
func (c *Client) Flush(ctx context.Context) error { return c.c.flush(ctx) }
