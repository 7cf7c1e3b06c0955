package dummy

import (
	"context"
	"net/netip"

	"github.com/ipvskit/ipvskit/internal/kerr"
	"github.com/ipvskit/ipvskit/internal/nsfd"

	"github.com/vishvananda/netns"
)

// Config configures a Client. A nil *Config means the zero Config.
type Config struct {
	// NetNS is the network namespace the Client works in, chosen once by
	// New: 0 means the namespace of the thread that calls New; a positive
	// value is a file descriptor of the namespace, which the Client does
	// not keep (the caller may close theirs as soon as New returns); a
	// negative value, netns.None() included, makes New fail with a
	// *ValidationError.
	NetNS netns.NsHandle
	// Owner is the Client's ownership mark, written as the alias of every
	// link Ensure creates (`ip link show` prints "alias <owner>"). A link
	// whose alias is not Owner is never used, changed or deleted. Empty
	// means "ipvskit:ipvskit", the mark of ipvskit's default instance. At
	// most 255 bytes, printable, no NUL.
	Owner string
}

// DefaultOwner is the mark when Config.Owner is empty.
const DefaultOwner = "ipvskit:ipvskit"

// Client manages dummy links and the addresses bound to them in one network
// namespace, over rtnetlink. It is safe for concurrent use; calls are
// serialised on one netlink socket.
//
// Which links and addresses it changes, and which it leaves alone: see the
// package documentation.
//
// Every method takes a context: it is checked before each request sent to
// the kernel, and its deadline becomes the socket's send and receive timeout.
type Client struct {
	c      *client
	probes kerr.Probes // each feature's answer in this namespace
}

// New opens a Client in cfg.NetNS. The error wraps ErrNotSupported on
// systems other than Linux; an invalid cfg.NetNS or Owner is a
// *ValidationError, before anything is opened.
func New(cfg *Config) (*Client, error) {
	conf := Config{}
	if cfg != nil {
		conf = *cfg
	}
	if conf.Owner == "" {
		conf.Owner = DefaultOwner
	}
	if err := ValidateOwner(conf.Owner); err != nil {
		return nil, err
	}
	if v, reason, ok := nsfd.Check(int(conf.NetNS)); !ok {
		return nil, &ValidationError{Field: "Config.NetNS", Value: v, Reason: reason}
	}
	c, err := newClient(&conf)
	if err != nil {
		return nil, err
	}
	return &Client{c: c}, nil
}

// Close releases the Client's netlink socket. It leaves every link and
// address as it is. Calls after Close fail with an error wrapping
// fs.ErrClosed.
func (c *Client) Close() error {
	err := c.c.close()
	c.probes.Forget() // a closed Client's probe fails, as its other calls do
	return err
}

// Ensure makes sure a dummy link called name, marked as the Client's,
// exists. A missing link is created with the mark as its alias,
// administratively down and with ARP off (NOARP), the state
// kube-proxy keeps kube-ipvs0 in: the kernel still adds a local route for
// every address bound to it, so the node accepts traffic to those addresses,
// and neither answers ARP for them on this link nor sends anything from it.
// An existing dummy link with the mark is accepted as it is (its flags are
// not changed). created reports whether Ensure made the link.
//
// If name is taken by a link of another type, the error wraps a
// *LinkTypeError, by a dummy link without the mark a *ForeignError (both
// match fs.ErrExist), and nothing is changed. If the
// kernel has no dummy link type (module dummy), the error wraps
// ErrNotSupported.
func (c *Client) Ensure(ctx context.Context, name string) (created bool, err error) {
	return c.c.ensure(ctx, name)
}

// Adopt marks an existing dummy link that carries no mark at all (no
// alias), such as the kube-ipvs0 that kube-proxy leaves behind, as the
// Client's, changing nothing else: its addresses, flags and state stay. It is
// the one way a Client takes a link it did not make, and it is for a caller
// that knows whose the link was (a takeover of a kube-proxy node). A link
// already marked as the Client's is accepted as it is. A link with another
// alias (another owner's mark, or a name someone gave it) is a
// *ForeignError, not a dummy link a *LinkTypeError (both match
// fs.ErrExist), and no link an error matching fs.ErrNotExist; none of them
// changes anything.
func (c *Client) Adopt(ctx context.Context, name string) error {
	return c.c.adopt(ctx, name)
}

// AdoptableAddrs returns the addresses on the dummy link name, as Addrs
// does, of a link Adopt would take: one marked as the Client's or one with
// no alias (kube-proxy's kube-ipvs0 before a takeover). It changes nothing:
// it is how a caller sees what a takeover would find before it takes the
// link. A link with another alias is a *ForeignError, as for Adopt.
func (c *Client) AdoptableAddrs(ctx context.Context, name string) ([]netip.Prefix, error) {
	return c.c.adoptableAddrs(ctx, name)
}

// Addrs returns every address on the dummy link name, with its prefix
// length, sorted. The error matches fs.ErrNotExist if there is no such link,
// and wraps a *LinkTypeError if name is not a dummy link.
func (c *Client) Addrs(ctx context.Context, name string) ([]netip.Prefix, error) {
	return c.c.addrs(ctx, name)
}

// Bind adds addr to the dummy link name as a /32 (IPv4) or /128 (IPv6)
// address. The error matches fs.ErrExist if it is already bound,
// fs.ErrNotExist if there is no such link, and is a *ValidationError for an
// address that cannot be a VIP (unspecified, multicast, IPv6 link-local, IPv4-mapped or zoned).
func (c *Client) Bind(ctx context.Context, name string, addr netip.Addr) error {
	return c.c.bind(ctx, name, addr)
}

// Unbind removes the /32 or /128 address addr from the dummy link name. The
// error matches fs.ErrNotExist if addr is not bound there (or there is no
// such link).
func (c *Client) Unbind(ctx context.Context, name string, addr netip.Addr) error {
	return c.c.unbind(ctx, name, addr)
}

// Sync makes the addresses of the dummy link name exactly wanted (each as a
// /32 or /128): it binds the missing ones first, then unbinds the others,
// and reports both. The kernel's own IPv6 link-local address (present only
// while the link is up) is left alone. Every wanted address is validated
// before anything is changed; an invalid one is a *ValidationError naming
// its index. Sync never touches another link, and fails with a
// *LinkTypeError if name is not a dummy link.
//
// If the kernel refuses some changes, Sync still makes the others, and
// returns what it did together with an error that joins every failure; the
// next Sync repairs what is left.
func (c *Client) Sync(ctx context.Context, name string, wanted []netip.Addr) (SyncResult, error) {
	return c.c.sync(ctx, name, wanted)
}

// Update binds every address of add to the dummy link name and unbinds
// every address of remove, sending the requests many to a netlink send with
// one acknowledgement per send: binding thousands of VIPs costs a few round
// trips instead of one each. An address of add that is already bound, or of
// remove that is not, is not an error, so Update is idempotent. Every address
// is validated first (a *ValidationError names add[i] or remove[i]) and
// nothing is changed if one is invalid. If the kernel refuses some requests,
// the others still take effect and the error joins one *Error per refusal.
func (c *Client) Update(ctx context.Context, name string, add, remove []netip.Addr) error {
	return c.c.update(ctx, name, add, remove)
}

// Delete deletes the dummy link name and with it every address on it. The
// error matches fs.ErrNotExist if there is no such link; a link of another
// type is not deleted (*LinkTypeError).
func (c *Client) Delete(ctx context.Context, name string) error {
	return c.c.delete(ctx, name)
}
