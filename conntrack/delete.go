package conntrack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"syscall"

	"github.com/mdlayher/netlink"

	"github.com/ipvskit/ipvskit/internal/nlconn"
)

type client struct {
	conn nlconn.Transport

	mu     sync.Mutex
	closed bool
}

func (c *client) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("conntrack: close: %w", fs.ErrClosed)
	}
	c.closed = true
	return c.conn.Close()
}

func (c *client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// families are the families filters involve, IPv4 first.
func families(filters []Filter) []Family {
	var v4, v6 bool
	for i := range filters {
		fam, ok := filters[i].Family()
		v4 = v4 || !ok || fam == IPv4
		v6 = v6 || !ok || fam == IPv6
	}
	var out []Family
	if v4 {
		out = append(out, IPv4)
	}
	if v6 {
		out = append(out, IPv6)
	}
	return out
}

func (c *client) delete(ctx context.Context, filters []Filter) (int, error) {
	if err := validateFilters(filters); err != nil {
		return 0, err
	}
	if len(filters) == 0 {
		return 0, nil
	}
	if c.isClosed() {
		return 0, &Error{Op: "dump", Family: families(filters)[0], Err: fs.ErrClosed}
	}
	deleted := 0
	for _, fam := range families(filters) {
		n, err := c.deleteFamily(ctx, fam, filters)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

// deleteFamily dumps fam's table, then deletes the entries filters match.
func (c *client) deleteFamily(ctx context.Context, fam Family, filters []Filter) (int, error) {
	var (
		msgs  []netlink.Message
		flows []Flow
	)
	err := c.conn.Dump(ctx, dumpRequest(fam), func(_ netlink.Header, data []byte) error {
		e, err := decodeEntry(data)
		if err != nil {
			return err
		}
		for i := range filters {
			if filters[i].Matches(e.flow) {
				msgs = append(msgs, deleteRequest(&e))
				flows = append(flows, e.flow)
				break
			}
		}
		return nil
	})
	if err != nil {
		return 0, &Error{Op: "dump", Family: fam, Err: dumpCause(err)}
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	errs, err := c.conn.Batch(ctx, msgs, nlconn.BatchOptions{})
	deleted, failed := 0, 0
	var first *Error
	for i, e := range errs {
		switch {
		case e == nil:
			deleted++
		case errors.Is(e, syscall.ENOENT):
			// Gone already, or its tuple now belongs to a new flow.
		default:
			failed++
			if first == nil {
				first = &Error{Op: "delete", Family: fam, Flow: flows[i], Err: closedCause(e)}
			}
		}
	}
	if err != nil && first == nil {
		first = &Error{Op: "delete", Family: fam, Err: closedCause(err)}
	}
	if first != nil {
		first.Failed = failed
		return deleted, first
	}
	return deleted, nil
}

// dumpCause explains a failed dump: nfnetlink answers EINVAL for a request
// to a subsystem it does not have (net/netfilter/nfnetlink.c).
func dumpCause(err error) error {
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EOPNOTSUPP) {
		return fmt.Errorf("the kernel has no ctnetlink (module nf_conntrack_netlink): %w (%w)", ErrNotSupported, err)
	}
	return closedCause(err)
}

// closedCause makes a socket closed under a call match fs.ErrClosed.
func closedCause(err error) error {
	if errors.Is(err, nlconn.ErrClosed) && !errors.Is(err, fs.ErrClosed) {
		return fmt.Errorf("%w: %w", fs.ErrClosed, err)
	}
	return err
}
