package conntrack

import (
	"context"

	"github.com/ipvskit/ipvskit/internal/kerr"
	"github.com/ipvskit/ipvskit/internal/nsfd"

	"github.com/vishvananda/netns"
)

// Config configures a Client. A nil *Config means the zero Config.
type Config struct {
	// NetNS is the network namespace whose conntrack table the Client
	// works on, chosen once by New: 0 means the namespace of the thread
	// that calls New; a positive value is a file descriptor of the
	// namespace, which New duplicates (the caller may close theirs as soon
	// as New returns); a negative value, netns.None() included, makes New
	// fail with a *ValidationError.
	NetNS netns.NsHandle
}

// Client deletes conntrack entries of one network namespace over ctnetlink
// (netfilter netlink, subsystem NFNL_SUBSYS_CTNETLINK). It is safe for
// concurrent use; calls are serialised on one netlink socket.
type Client struct {
	c      *client
	probes kerr.Probes // each feature's answer in this namespace
}

// New opens a Client in cfg.NetNS. The error wraps ErrNotSupported on
// systems other than Linux and on kernels without netfilter netlink; an
// invalid cfg.NetNS is a *ValidationError, before anything is opened.
func New(cfg *Config) (*Client, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if v, reason, ok := nsfd.Check(int(cfg.NetNS)); !ok {
		return nil, &ValidationError{Field: "Config.NetNS", Value: v, Reason: reason}
	}
	conn, err := dial(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{c: &client{conn: conn}}, nil
}

// Close releases the Client's netlink socket. Calls after Close fail with
// an error wrapping fs.ErrClosed.
func (c *Client) Close() error {
	err := c.c.close()
	c.probes.Forget() // a closed Client's probe fails, as its other calls do
	return err
}

// Delete deletes every conntrack entry that matches any of filters (see
// Filter.Matches) and returns how many it deleted.
//
// It validates every filter first: an invalid one is a *ValidationError
// naming it ("filters[1].Addr") and nothing is deleted. Then it lists the
// table once per address family the filters involve (a filter without
// addresses involves both) and deletes the matching entries, many requests
// to a netlink send. An entry that is gone by the time it is deleted (it
// expired, someone else deleted it, or a new flow took its tuple) is
// neither counted nor an error. No filters means nothing to do: no request
// is sent.
//
// A failure is an *Error. If the kernel refuses some deletions, the others
// still happen: deleted counts them and the error names the first refused
// flow and how many were refused. If the kernel has no ctnetlink (module
// nf_conntrack_netlink), the error wraps ErrNotSupported. ctx bounds the
// whole call: its cancellation or deadline stops the dump or the deletions
// in flight.
func (c *Client) Delete(ctx context.Context, filters ...Filter) (deleted int, err error) {
	return c.c.delete(ctx, filters)
}
