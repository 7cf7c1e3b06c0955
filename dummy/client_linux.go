//go:build linux

package dummy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/ipvskit/ipvskit/internal/nlconn"
	"github.com/ipvskit/ipvskit/internal/nsfd"
)

// kind is the rtnetlink link kind of a dummy link (IFLA_INFO_KIND).
const kind = "dummy"

// noDeadline is the socket timeout for a context without a deadline. The
// netlink library cannot clear a timeout once set, and rtnetlink answers
// link and address requests before sendmsg returns, so this only has to be
// longer than any sane call.
const noDeadline = time.Hour

// dumpRetries bounds how often an address dump interrupted by a concurrent
// change is retried before the call fails.
const dumpRetries = 5

type client struct {
	owner string // the mark: the alias of every link the client made
	mu    sync.Mutex
	h     *netlink.Handle // nil once closed
	nl    *nlconn.Conn    // the batch path (Update)
}

func newClient(cfg *Config) (*client, error) {
	fd, err := nsfd.Open(int(cfg.NetNS))
	if err != nil {
		return nil, fmt.Errorf("dummy: %w", err)
	}
	// Both sockets are bound to the namespace when they are opened; the
	// descriptor is not needed afterwards.
	defer unix.Close(fd)
	hns := netns.NsHandle(fd)
	if cfg.NetNS == 0 {
		// Already here: open the socket without entering the namespace,
		// which would need CAP_SYS_ADMIN.
		hns = netns.None()
	}
	h, err := netlink.NewHandleAt(hns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("dummy: opening an rtnetlink socket in the network namespace: %w", err)
	}
	nl, err := nlconn.Dial(unix.NETLINK_ROUTE, &nlconn.Config{NetNS: fd})
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("dummy: opening an rtnetlink socket in the network namespace: %w", err)
	}
	return &client{owner: cfg.Owner, h: h, nl: nl}, nil
}

func (c *client) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == nil {
		return fmt.Errorf("dummy: close: %w", fs.ErrClosed)
	}
	c.h.Close()
	c.h = nil
	c.nl.Close()
	return nil
}

// begin is called with c.mu held before each request: it fails if the
// client is closed or ctx is done, and bounds the socket by ctx's deadline.
func (c *client) begin(ctx context.Context) error {
	if c.h == nil {
		return fs.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	to := noDeadline
	if d, ok := ctx.Deadline(); ok {
		to = time.Until(d)
		if to < time.Microsecond {
			return context.DeadlineExceeded
		}
	}
	return c.h.SetSocketTimeout(to)
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
func (c *client) lookup(name string) (netlink.Link, error) {
	l, err := c.lookupAny(name)
	if err == nil && l.Attrs().Alias != c.owner {
		return nil, &ForeignError{Name: name, Alias: l.Attrs().Alias, Owner: c.owner}
	}
	return l, err
}

// lookupAny finds the dummy link called name, whoever made it.
func (c *client) lookupAny(name string) (netlink.Link, error) {
	l, err := c.h.LinkByName(name)
	if err != nil {
		if _, ok := err.(netlink.LinkNotFoundError); ok {
			return nil, notExist{fmt.Errorf("no such link: %w", unix.ENODEV)}
		}
		return nil, err
	}
	if t := l.Type(); t != kind {
		return nil, &LinkTypeError{Name: name, Type: t}
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
	_, err := c.lookup(name)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return false, err // there already, or a foreign link, or a failure
	}
	// The kernel ignores an alias in the request that creates a link, so
	// the link is made under a temporary name, marked and set NOARP, then
	// renamed: no link of the asked-for name is ever without the mark
	// (a run cut short leaves at most a marked link of a temporary name).
	tmp := fmt.Sprintf("ipvskit-%07x", rand.Uint32()&0xfffffff)
	err = c.h.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: tmp, Alias: c.owner}})
	switch {
	case errors.Is(err, unix.EOPNOTSUPP):
		return false, fmt.Errorf("the kernel has no dummy link type (module dummy): %w (%w)", ErrNotSupported, err)
	case err != nil:
		return false, err
	}
	l, err := c.lookupAny(tmp)
	if err != nil {
		return false, err
	}
	// A new link is down; mark it, turn ARP off, give it its name. If
	// that fails, remove it again so that a retry starts from scratch.
	fix := func() error {
		if err := c.h.LinkSetAlias(l, c.owner); err != nil {
			return fmt.Errorf("setting the alias: %w", err)
		}
		if err := c.h.LinkSetARPOff(l); err != nil {
			return fmt.Errorf("setting NOARP: %w", err)
		}
		if err := c.h.LinkSetName(l, name); err != nil {
			return fmt.Errorf("naming the new link: %w", err)
		}
		return nil
	}
	if err := fix(); err != nil {
		if derr := c.h.LinkDel(l); derr != nil {
			return false, fmt.Errorf("%w (and deleting the new link %s again: %w)", err, tmp, derr)
		}
		if errors.Is(err, unix.EEXIST) {
			// Someone made a link of the name meanwhile: accept it if
			// it is ours to accept.
			_, err = c.lookup(name)
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
	err := c.begin(ctx)
	var l netlink.Link
	if err == nil {
		l, err = c.lookupAny(name)
	}
	if err == nil {
		switch l.Attrs().Alias {
		case c.owner:
		case "":
			err = c.h.LinkSetAlias(l, c.owner)
		default:
			err = &ForeignError{Name: name, Alias: l.Attrs().Alias, Owner: c.owner}
		}
	}
	return wrap(ctx, "adopt", name, netip.Prefix{}, err)
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
	l, err := c.lookup(name)
	if err != nil {
		return nil, err
	}
	return c.list(l)
}

// list dumps l's addresses, retrying a dump that a concurrent change
// interrupted (it may be inconsistent, and Sync must not act on that).
func (c *client) list(l netlink.Link) ([]netip.Prefix, error) {
	var err error
	for range dumpRetries {
		var as []netlink.Addr
		as, err = c.h.AddrList(l, netlink.FAMILY_ALL)
		if errors.Is(err, netlink.ErrDumpInterrupted) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ps := make([]netip.Prefix, 0, len(as))
		for _, a := range as {
			p, ok := toPrefix(a.IPNet)
			if !ok {
				return nil, fmt.Errorf("the kernel listed an address that is not IPv4 or IPv6: %v", a.IPNet)
			}
			ps = append(ps, p)
		}
		sortPrefixes(ps)
		return ps, nil
	}
	return nil, fmt.Errorf("listing addresses: %d dumps in a row were interrupted by changes: %w", dumpRetries, err)
}

func toPrefix(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, bits := n.Mask.Size()
	if bits == 32 {
		a = a.Unmap()
	}
	if bits != a.BitLen() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, ones), true
}

func toAddr(p netip.Prefix) *netlink.Addr {
	a := &netlink.Addr{IPNet: &net.IPNet{
		IP:   p.Addr().AsSlice(),
		Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen()),
	}}
	if p.Addr().Is6() {
		// No duplicate address detection: a VIP is meant to be shared,
		// and a tentative address could not be used.
		a.Flags = unix.IFA_F_NODAD
	}
	return a
}

func (c *client) bind(ctx context.Context, name string, addr netip.Addr) error {
	if err := validateName(name); err != nil {
		return err
	}
	if err := validateAddr("addr", addr); err != nil {
		return err
	}
	p := hostPrefix(addr)
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.begin(ctx)
	var l netlink.Link
	if err == nil {
		l, err = c.lookup(name)
	}
	if err == nil {
		err = c.h.AddrAdd(l, toAddr(p))
	}
	return wrap(ctx, "bind", name, p, err)
}

func (c *client) unbind(ctx context.Context, name string, addr netip.Addr) error {
	if err := validateName(name); err != nil {
		return err
	}
	if err := validateAddr("addr", addr); err != nil {
		return err
	}
	p := hostPrefix(addr)
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.begin(ctx)
	var l netlink.Link
	if err == nil {
		l, err = c.lookup(name)
	}
	if err == nil {
		err = delAddr(c.h, l, p)
	}
	return wrap(ctx, "unbind", name, p, err)
}

// delAddr deletes p from l; "not there" matches fs.ErrNotExist.
func delAddr(h *netlink.Handle, l netlink.Link, p netip.Prefix) error {
	err := h.AddrDel(l, toAddr(p))
	if errors.Is(err, unix.EADDRNOTAVAIL) {
		return notExist{err}
	}
	return err
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
	l, err := c.lookup(name)
	if err != nil {
		return res, wrap(ctx, "sync", name, netip.Prefix{}, err)
	}
	have, err := c.list(l)
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
			err = c.h.AddrAdd(l, toAddr(p))
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
			err = delAddr(c.h, l, p)
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
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.begin(ctx)
	var l netlink.Link
	if err == nil {
		l, err = c.lookup(name)
	}
	if err == nil {
		err = c.h.LinkDel(l)
	}
	return wrap(ctx, "delete", name, netip.Prefix{}, err)
}
