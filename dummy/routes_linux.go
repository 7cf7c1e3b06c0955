//go:build linux

package dummy

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	mnl "github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/ipvskit/ipvskit/internal/nlconn"
)

func (c *client) routes(ctx context.Context, name string) ([]netip.Addr, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.begin(ctx)
	var l link
	if err == nil {
		l, err = c.lookup(ctx, name)
	}
	var as []netip.Addr
	if err == nil {
		as, err = c.listRoutes(ctx, l.index)
	}
	return as, wrap(ctx, "routes", name, netip.Prefix{}, err)
}

// listRoutes dumps both families' routes and returns the destinations of
// those that are the client's on link index, sorted, retrying a dump that a
// concurrent change interrupted.
func (c *client) listRoutes(ctx context.Context, index int) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, fam := range []byte{afInet, afInet6} {
		var err error
		for range dumpRetries {
			var as []netip.Addr
			intr := false
			req := mnl.Message{Header: mnl.Header{Type: rtmGetRoute}, Data: routeDumpRequest(fam)}
			err = c.nl.Dump(ctx, req, func(h mnl.Header, data []byte) error {
				if h.Flags&flagDumpIntr != 0 {
					intr = true
				}
				if h.Type != unix.RTM_NEWROUTE {
					return nil
				}
				if r, ok := parseRoute(data); ok && r.ours(index) {
					as = append(as, r.dst.Addr())
				}
				return nil
			})
			if err == nil && intr {
				err = fmt.Errorf("listing routes: the dump was interrupted by a change")
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("listing routes: %w", err)
			}
			out = append(out, as...)
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w (%d dumps in a row)", err, dumpRetries)
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out), nil
}

// updateRoutes adds the local routes of add and removes those of remove on
// the link name through the batch path.
func (c *client) updateRoutes(ctx context.Context, name string, add, remove []netip.Addr) error {
	if err := validateUpdate(name, add, remove); err != nil {
		return err
	}
	if len(add)+len(remove) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.begin(ctx)
	var l link
	if err == nil {
		l, err = c.lookup(ctx, name)
	}
	if err == nil && l.flags&iffUp == 0 && slices.ContainsFunc(add, netip.Addr.Is6) {
		// IPv6 routes need the link up (see UpdateRoutes).
		if err = c.setLinkFlag(ctx, rtmNewLink, l.index, iffUp); err != nil {
			err = fmt.Errorf("setting the link up for IPv6 routes: %w", err)
		}
	}
	if err != nil {
		return wrap(ctx, "update routes", name, netip.Prefix{}, err)
	}
	index := l.index
	msgs := make([]mnl.Message, 0, len(add)+len(remove))
	for _, a := range add {
		// CREATE without EXCL or REPLACE: the kernel answers EEXIST only
		// for an identical route (ours), and never replaces another
		// program's route for the same address.
		msgs = append(msgs, mnl.Message{Header: mnl.Header{Type: rtmNewRoute, Flags: mnl.Create}, Data: routeMessage(index, a)})
	}
	for _, a := range remove {
		msgs = append(msgs, mnl.Message{Header: mnl.Header{Type: rtmDelRoute}, Data: routeMessage(index, a)})
	}
	errs, err := c.nl.Batch(ctx, msgs, nlconn.BatchOptions{})
	if err != nil {
		return wrap(ctx, "update routes", name, netip.Prefix{}, err)
	}
	var failed []error
	for i, e := range errs {
		if e == nil {
			continue
		}
		op, a := "add route", netip.Addr{}
		if i < len(add) {
			a = add[i]
			if errors.Is(e, unix.EEXIST) {
				continue // there already
			}
		} else {
			op, a = "remove route", remove[i-len(add)]
			if errors.Is(e, unix.ESRCH) {
				continue // not there: nothing to remove
			}
		}
		failed = append(failed, wrap(ctx, op, name, hostPrefix(a), e))
	}
	return errors.Join(failed...)
}
