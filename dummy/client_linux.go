//go:build linux

package dummy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	mnl "github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/ipvskit/ipvskit/internal/nlconn"
	"github.com/ipvskit/ipvskit/internal/nsfd"
)

// dumpRetries bounds how often a dump interrupted by a concurrent change
// is retried before the call fails.
const dumpRetries = 5

// flagDumpIntr is NLM_F_DUMP_INTR: the dump was interrupted by a change and
// may be inconsistent.
const flagDumpIntr = 0x10

type client struct {
	owner string // the mark: the alias of every link the client made
	mu    sync.Mutex
	nl    *nlconn.Conn // the rtnetlink socket; nil once closed
}

func newClient(cfg *Config) (*client, error) {
	fd, err := nsfd.Open(int(cfg.NetNS))
	if err != nil {
		return nil, fmt.Errorf("dummy: %w", err)
	}
	// The socket is bound to the namespace when it is opened (nlconn keeps
	// its own duplicate to reopen one); this descriptor is not needed
	// afterwards.
	defer unix.Close(fd)
	nl, err := nlconn.Dial(unix.NETLINK_ROUTE, &nlconn.Config{NetNS: fd})
	if err != nil {
		return nil, fmt.Errorf("dummy: opening an rtnetlink socket in the network namespace: %w", err)
	}
	return &client{owner: cfg.Owner, nl: nl}, nil
}

func (c *client) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nl == nil {
		return fmt.Errorf("dummy: close: %w", fs.ErrClosed)
	}
	c.nl.Close()
	c.nl = nil
	return nil
}

// begin is called with c.mu held before each request: it fails if the
// client is closed or ctx is done or about to be. The socket itself obeys
// ctx's deadline and cancellation (nlconn).
func (c *client) begin(ctx context.Context) error {
	if c.nl == nil {
		return fs.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < time.Microsecond {
		return context.DeadlineExceeded
	}
	return nil
}

// wrap turns a failure of op into an *Error; validation errors pass as they
// are. If ctx ended meanwhile (a socket timeout), the error says so too.
func wrap(ctx context.Context, op, name string, addr netip.Prefix, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*ValidationError); ok {
		return err
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w: %w", cerr, err)
	}
	return &Error{Op: op, Link: name, Addr: addr, Err: err}
}

// lookup finds the link called name and checks that it is a dummy link
// with the client's mark.
func (c *client) lookup(ctx context.Context, name string) (link, error) {
	l, err := c.lookupAny(ctx, name)
	if err == nil && l.alias != c.owner {
		return link{}, &ForeignError{Name: name, Alias: l.alias, Owner: c.owner}
	}
	return l, err
}

// lookupAny finds the dummy link called name, whoever made it.
func (c *client) lookupAny(ctx context.Context, name string) (link, error) {
	l, err := c.getLink(ctx, name)
	if err != nil {
		return link{}, err
	}
	if l.kind != kind {
		return link{}, &LinkTypeError{Name: name, Type: l.typ()}
	}
	return l, nil
}

func (c *client) ensure(ctx context.Context, name string) (created bool, err error) {
	if err := validateName(name); err != nil {
		return false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	created, err = c.ensureLocked(ctx, name)
	return created, wrap(ctx, "ensure", name, netip.Prefix{}, err)
}

func (c *client) ensureLocked(ctx context.Context, name string) (bool, error) {
	if err := c.begin(ctx); err != nil {
		return false, err
	}
	_, err := c.lookup(ctx, name)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return false, err // there already, or a foreign link, or a failure
	}
	// The kernel ignores an alias in the request that creates a link, so
	// the link is made under a temporary name, marked and set NOARP, then
	// renamed: no link of the asked-for name is ever without the mark
	// (a run cut short leaves at most a marked link of a temporary name).
	tmp := fmt.Sprintf("ipvskit-%07x", rand.Uint32()&0xfffffff)
	err = c.createLink(ctx, tmp, c.owner, nil)
	switch {
	case errors.Is(err, unix.EOPNOTSUPP):
		return false, fmt.Errorf("the kernel has no dummy link type (module dummy): %w (%w)", ErrNotSupported, err)
	case err != nil:
		return false, err
	}
	l, err := c.lookupAny(ctx, tmp)
	if err != nil {
		return false, err
	}
	// A new link is down; mark it, turn ARP off, give it its name. If
	// that fails, remove it again so that a retry starts from scratch.
	fix := func() error {
		if err := c.setLinkAttr(ctx, l.index, iflaIfalias, c.owner); err != nil {
			return fmt.Errorf("setting the alias: %w", err)
		}
		if err := c.setLinkFlag(ctx, rtmSetLink, l.index, iffNoARP); err != nil {
			return fmt.Errorf("setting NOARP: %w", err)
		}
		if err := c.setLinkAttr(ctx, l.index, iflaIfname, name); err != nil {
			return fmt.Errorf("naming the new link: %w", err)
		}
		return nil
	}
	if err := fix(); err != nil {
		if derr := c.deleteLink(ctx, l.index); derr != nil {
			return false, fmt.Errorf("%w (and deleting the new link %s again: %w)", err, tmp, derr)
		}
		if errors.Is(err, unix.EEXIST) {
			// Someone made a link of the name meanwhile: accept it if
			// it is ours to accept.
			_, err = c.lookup(ctx, name)
			return false, err
		}
		return false, err
	}
	return true, nil
}

func (c *client) adopt(ctx context.Context, name string) error {
	if err := validateName(name); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l, err := c.adoptable(ctx, name)
	if err == nil && l.alias == "" {
		err = c.setLinkAttr(ctx, l.index, iflaIfalias, c.owner)
	}
	return wrap(ctx, "adopt", name, netip.Prefix{}, err)
}

// adoptable finds the dummy link name if Adopt may take it: marked as the
// Client's, or with no alias. Another alias is a *ForeignError.
func (c *client) adoptable(ctx context.Context, name string) (link, error) {
	if err := c.begin(ctx); err != nil {
		return link{}, err
	}
	l, err := c.lookupAny(ctx, name)
	if err == nil && l.alias != c.owner && l.alias != "" {
		return link{}, &ForeignError{Name: name, Alias: l.alias, Owner: c.owner}
	}
	return l, err
}

func (c *client) adoptableAddrs(ctx context.Context, name string) ([]netip.Prefix, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l, err := c.adoptable(ctx, name)
	var ps []netip.Prefix
	if err == nil {
		ps, err = c.list(ctx, l.index)
	}
	return ps, wrap(ctx, "addrs", name, netip.Prefix{}, err)
}

func (c *client) addrs(ctx context.Context, name string) ([]netip.Prefix, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, err := c.addrsLocked(ctx, name)
	return ps, wrap(ctx, "addrs", name, netip.Prefix{}, err)
}

func (c *client) addrsLocked(ctx context.Context, name string) ([]netip.Prefix, error) {
	if err := c.begin(ctx); err != nil {
		return nil, err
	}
	l, err := c.lookup(ctx, name)
	if err != nil {
		return nil, err
	}
	return c.list(ctx, l.index)
}

// list dumps the addresses of link index, sorted, retrying a dump that a
// concurrent change interrupted (it may be inconsistent, and Sync must not
// act on that).
func (c *client) list(ctx context.Context, index int) ([]netip.Prefix, error) {
	for range dumpRetries {
		var ps []netip.Prefix
		intr := false
		req := mnl.Message{Header: mnl.Header{Type: rtmGetAddr}, Data: addrDumpRequest()}
		err := c.nl.Dump(ctx, req, func(h mnl.Header, data []byte) error {
			if h.Flags&flagDumpIntr != 0 {
				intr = true
			}
			if h.Type != rtmNewAddr {
				return nil
			}
			i, p, ok := parseAddr(data)
			switch {
			case i != index && len(data) >= ifaddrmsgLen:
				return nil // another link's
			case !ok:
				return fmt.Errorf("the kernel listed an address that is not IPv4 or IPv6, or a malformed one (% x)", data)
			}
			ps = append(ps, p)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("listing addresses: %w", err)
		}
		if !intr {
			sortPrefixes(ps)
			return ps, nil
		}
	}
	return nil, fmt.Errorf("listing addresses: %d dumps in a row were interrupted by changes", dumpRetries)
}

// addAddr binds p to link index; "already there" matches fs.ErrExist (the
// errno EEXIST does).
func (c *client) addAddr(ctx context.Context, index int, p netip.Prefix) error {
	_, err := c.nl.Execute(ctx, mnl.Message{
		Header: mnl.Header{Type: rtmNewAddr, Flags: mnl.Create | mnl.Excl},
		Data:   addrMessage(index, p),
	})
	return err
}

// delAddr deletes p from link index; "not there" matches fs.ErrNotExist.
func (c *client) delAddr(ctx context.Context, index int, p netip.Prefix) error {
	_, err := c.nl.Execute(ctx, mnl.Message{Header: mnl.Header{Type: rtmDelAddr}, Data: addrMessage(index, p)})
	if errors.Is(err, unix.EADDRNOTAVAIL) {
		return notExist{err}
	}
	return err
}

// onLink runs f on the client's link name, with c.mu held, for the
// address operation op on p.
func (c *client) onLink(ctx context.Context, op, name string, p netip.Prefix, f func(l link) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.begin(ctx)
	var l link
	if err == nil {
		l, err = c.lookup(ctx, name)
	}
	if err == nil {
		err = f(l)
	}
	return wrap(ctx, op, name, p, err)
}

func (c *client) bind(ctx context.Context, name string, addr netip.Addr) error {
	return c.onAddr(ctx, "bind", name, addr, c.addAddr)
}

func (c *client) unbind(ctx context.Context, name string, addr netip.Addr) error {
	return c.onAddr(ctx, "unbind", name, addr, c.delAddr)
}

// onAddr validates name and addr, then runs f on the client's link name
// and addr as a host prefix, for the address operation op.
func (c *client) onAddr(ctx context.Context, op, name string, addr netip.Addr, f func(ctx context.Context, index int, p netip.Prefix) error) error {
	if err := validateName(name); err != nil {
		return err
	}
	if err := validateAddr("addr", addr); err != nil {
		return err
	}
	p := hostPrefix(addr)
	return c.onLink(ctx, op, name, p, func(l link) error { return f(ctx, l.index, p) })
}

func (c *client) sync(ctx context.Context, name string, wanted []netip.Addr) (SyncResult, error) {
	if err := validateName(name); err != nil {
		return SyncResult{}, err
	}
	want, err := validateWanted(wanted)
	if err != nil {
		return SyncResult{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()

	var res SyncResult
	if err := c.begin(ctx); err != nil {
		return res, wrap(ctx, "sync", name, netip.Prefix{}, err)
	}
	l, err := c.lookup(ctx, name)
	if err != nil {
		return res, wrap(ctx, "sync", name, netip.Prefix{}, err)
	}
	have, err := c.list(ctx, l.index)
	if err != nil {
		return res, wrap(ctx, "sync", name, netip.Prefix{}, err)
	}
	add, del := plan(have, want)

	// Bind before unbinding, so that an address moving between prefix
	// lengths is never missing. Keep going after a failure: every change
	// made is one the next Sync need not make.
	var errs []error
	for _, p := range add {
		err := c.begin(ctx)
		if err == nil {
			err = c.addAddr(ctx, l.index, p)
		}
		switch {
		case err == nil:
			res.Added = append(res.Added, p)
		case errors.Is(err, unix.EEXIST): // bound meanwhile: as wanted
		default:
			errs = append(errs, wrap(ctx, "sync", name, p, err))
		}
		if ctx.Err() != nil {
			return res, errors.Join(errs...)
		}
	}
	for _, p := range del {
		err := c.begin(ctx)
		if err == nil {
			err = c.delAddr(ctx, l.index, p)
		}
		switch {
		case err == nil:
			res.Removed = append(res.Removed, p)
		case errors.Is(err, fs.ErrNotExist): // unbound meanwhile: as wanted
		default:
			errs = append(errs, wrap(ctx, "sync", name, p, err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return res, errors.Join(errs...)
}

func (c *client) delete(ctx context.Context, name string) error {
	if err := validateName(name); err != nil {
		return err
	}
	return c.onLink(ctx, "delete", name, netip.Prefix{}, func(l link) error { return c.deleteLink(ctx, l.index) })
}
