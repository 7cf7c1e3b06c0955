package ipset

import (
	"context"

	"github.com/ipvskit/ipvskit/internal/nsfd"

	"github.com/vishvananda/netns"
)

// Config configures a Client. A nil *Config means the defaults.
type Config struct {
	// NetNS is the network namespace the client works in, chosen once at
	// New: 0 means the namespace of the thread that calls New; a positive
	// value is a file descriptor of the namespace, which New duplicates
	// (the caller may close theirs as soon as New returns); a negative
	// value, netns.None() included, makes New fail with a
	// *ValidationError.
	NetNS netns.NsHandle
}

// A Client talks to the kernel's ipset subsystem over netlink, in one network
// namespace. It is safe for concurrent use. It never runs ipset(8).
type Client struct{ c *client }

// New dials the ipset netlink subsystem in cfg.NetNS and negotiates the
// protocol version (7 or 6). An error wrapping ErrNotSupported means the
// kernel has no ipset (module ip_set); an invalid cfg.NetNS is a
// *ValidationError, before anything is opened.
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

// Close releases the client's socket.
func (c *Client) Close() error { return c.c.close() }

// Protocol returns the ipset protocol version in use (6 or 7).
func (c *Client) Protocol() int { return int(c.c.proto) }

// Create creates a set. The type revision is the newest the kernel has for
// s.Type and s.Family (asked with the TYPE command, once per client). It
// fails with an error matching fs.ErrExist if a set of that name exists, and
// one wrapping ErrNotSupported if the kernel lacks the type.
func (c *Client) Create(ctx context.Context, s Set) error { return c.c.create(ctx, &s, false) }

// Ensure creates a set unless one of that name exists with the same type
// and options (like `ipset create -exist`). A set of that name with other
// options is an error matching fs.ErrExist.
func (c *Client) Ensure(ctx context.Context, s Set) error { return c.c.create(ctx, &s, true) }

// Destroy destroys a set. It fails with ErrInUse while a rule references
// it, and with fs.ErrNotExist if there is no such set.
func (c *Client) Destroy(ctx context.Context, name string) error {
	return c.c.simple(ctx, "destroy", cmdDestroy, name)
}

// Flush removes every entry of a set.
func (c *Client) Flush(ctx context.Context, name string) error {
	return c.c.simple(ctx, "flush", cmdFlush, name)
}

// Rename renames a set. It fails with ErrSetExists (fs.ErrExist) if to is
// taken and with ErrInUse while a rule references the set.
func (c *Client) Rename(ctx context.Context, from, to string) error {
	return c.c.twoNames(ctx, "rename", cmdRename, from, to)
}

// Swap exchanges the contents (and options) of two sets of the same type and
// family, atomically: rules referencing either name see one set or the
// other, never a mix. It fails with ErrTypeMismatch if the types or families
// differ, and with ErrInUse (EBUSY) while either set is being listed.
func (c *Client) Swap(ctx context.Context, a, b string) error {
	return c.c.twoNames(ctx, "swap", cmdSwap, a, b)
}

// Header returns a set's options and state, without its entries.
func (c *Client) Header(ctx context.Context, name string) (SetInfo, error) {
	return c.c.header(ctx, name)
}

// List returns a set with its entries. The kernel sends a large set over
// many messages; List merges them.
func (c *Client) List(ctx context.Context, name string) (SetInfo, error) {
	return c.c.listOne(ctx, name)
}

// ListAll returns every set in the namespace, with entries unless
// headersOnly. Sets of types this package does not model have Type
// TypeUnknown and, with entries asked for, make ListAll fail.
func (c *Client) ListAll(ctx context.Context, headersOnly bool) ([]SetInfo, error) {
	return c.c.list(ctx, "", headersOnly)
}

// Add adds entries to a set, many to a message and many messages to a send,
// with one ack per send. An entry that is already present is not an error
// (its timeout, comment and counters are updated), like `ipset -exist add`.
// All entries are checked against the set's header first; if one is invalid
// nothing is added. Entries the kernel refuses (ErrSetFull, ...) come back
// joined, one *Error per entry; the others are added.
func (c *Client) Add(ctx context.Context, name string, entries ...Entry) error {
	return c.c.adt(ctx, cmdAdd, name, entries, false)
}

// AddStrict is Add, except that an entry already present is an error
// matching ErrElementExists and fs.ErrExist. It sends one entry per message.
func (c *Client) AddStrict(ctx context.Context, name string, entries ...Entry) error {
	return c.c.adt(ctx, cmdAdd, name, entries, true)
}

// Del removes entries from a set, batched like Add. An entry that is not
// present is not an error.
func (c *Client) Del(ctx context.Context, name string, entries ...Entry) error {
	return c.c.adt(ctx, cmdDel, name, entries, false)
}

// DelStrict is Del, except that an entry not present is an error matching
// ErrElementMissing and fs.ErrNotExist.
func (c *Client) DelStrict(ctx context.Context, name string, entries ...Entry) error {
	return c.c.adt(ctx, cmdDel, name, entries, true)
}

// Update adds and deletes the entries of many sets in few sends, with one
// ack per send: every set's additions first, then the deletions. Each
// Change names its set as created (Set), and its entries are checked against
// that, not against the kernel's header, so a delta over many sets costs one
// round trip. Like Add and Del, an entry already present (add) or absent
// (del) is not an error. Everything is validated before anything is sent; an
// invalid set or entry is a *ValidationError naming changes[i]. Entries the
// kernel refuses come back joined, as with Add; the others take effect.
func (c *Client) Update(ctx context.Context, changes ...Change) error {
	return c.c.update(ctx, changes)
}

// Test reports whether e is in the set. For hash:net and hash:net,port a
// full-length prefix (a host) matches the networks that contain it; a shorter
// one matches only that exact network, as in the kernel.
func (c *Client) Test(ctx context.Context, name string, e Entry) (bool, error) {
	return c.c.test(ctx, name, &e)
}

// Replace makes the set s hold exactly entries, atomically: it creates a
// temporary set with s's options, fills it, swaps it with s and destroys the
// old contents, so that rules referencing s never see a half-filled set. If
// s does not exist, the filled temporary set is renamed to s. Before touching
// the kernel it checks s and every entry, that the entries fit in s's
// maxelem, and that an existing s has the same type and family (else
// ErrTypeMismatch); on any failure before the swap the live set is untouched
// and the temporary set is destroyed.
func (c *Client) Replace(ctx context.Context, s Set, entries []Entry) error {
	return c.c.replace(ctx, &s, entries)
}
