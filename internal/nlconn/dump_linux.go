package nlconn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Dump sends the dump request m (netlink.Dump is added to its flags) and
// calls fn with every message of the dump as it arrives, in order, without
// keeping them: a dump of a large table costs one receive buffer, not a copy
// of the table. data aliases the receive buffer and is valid only during
// the call. If fn fails, the rest of the dump is read and dropped (so the
// socket stays usable) and fn's error is returned. A kernel error is an
// *Error; a call cut short by ctx wraps ctx.Err().
func (c *Conn) Dump(ctx context.Context, m netlink.Message, fn func(h netlink.Header, data []byte) error) error {
	return c.do(ctx, "dump", func(s *sock) error {
		c.seq++
		return s.dump(c.seq, m, fn)
	})
}

// dump sends m as a dump request with sequence number seq and reads its
// dump to the end (see Dump).
func (s *sock) dump(seq uint32, m netlink.Message, fn func(h netlink.Header, data []byte) error) error {
	s.out = appendMessage(s.out[:0], m.Header.Type, m.Header.Flags|netlink.Request|netlink.Dump, seq, s.pid, m.Data)
	if err := s.send(s.out); err != nil {
		return err
	}
	var ferr error
	for {
		b, err := s.recv()
		if err != nil {
			return err
		}
		for len(b) > 0 {
			h, data, rest, err := nextMessage(b)
			if err != nil {
				return fmt.Errorf("netlink receive: %w", err)
			}
			b = rest
			if h.Sequence != seq {
				continue // not ours (cannot happen on a fresh socket)
			}
			switch h.Type {
			case nlmsgError, nlmsgDone:
				kerr, err := parseError(h, data)
				if h.Type == nlmsgError && err != nil {
					return fmt.Errorf("netlink receive: %w", err)
				}
				if kerr != nil {
					return kerr
				}
				if h.Type == nlmsgDone {
					return ferr
				}
			default:
				if ferr == nil {
					ferr = fn(h, data)
				}
			}
		}
	}
}

// DumpEach sends every dump request of msgs and calls fn with every message
// of msgs[i]'s dump, as Dump does (data is valid only during the call). Up
// to parallel requests run at once, each on a socket of its own (a socket
// carries one dump at a time), so that the kernel's work for one overlaps
// the reading and decoding of another; the Conn keeps those sockets for the
// next call. w (0 <= w < parallel) names the goroutine that makes the call:
// the calls of one w never overlap, the messages of one request come in
// order and from one w, and calls of different w run concurrently. Requests
// are started in index order.
//
// On the first failure (a kernel error, fn's error, a socket error) no new
// request starts; DumpEach waits for those in flight and returns the error
// of the lowest index that failed, with that index. A ctx cancelled or
// expired stops it between requests and cuts the ones in flight short: the
// error wraps ctx.Err(), with the index of a request it cut short or -1.
// DumpEach returns only after every goroutine it started is done: none
// touches a socket, msgs or fn afterwards, and each exits at once.
func (c *Conn) DumpEach(ctx context.Context, msgs []netlink.Message, parallel int, fn func(w, i int, h netlink.Header, data []byte) error) (int, error) {
	if err := ctx.Err(); err != nil {
		return -1, &ctxError{"dump", err}
	}
	n := min(max(parallel, 1), len(msgs))
	if n == 0 {
		return -1, nil
	}
	socks, err := c.take(n)
	if err != nil {
		return -1, err
	}
	dl, _ := ctx.Deadline()
	for _, s := range socks {
		if err := s.nc.SetDeadline(dl); err != nil {
			c.give(socks, true)
			return -1, fmt.Errorf("netlink dump: setting deadline: %w", err)
		}
	}
	stop := context.AfterFunc(ctx, func() {
		for _, s := range socks {
			_ = s.nc.SetDeadline(time.Unix(1, 0))
		}
	})

	var (
		next    atomic.Int64
		failing atomic.Bool
		mu      sync.Mutex
		failed  = -1
		ferr    error
		broken  bool // a socket's state is unknown: replace them all
		wg      sync.WaitGroup
	)
	fail := func(i int, err error) {
		mu.Lock()
		defer mu.Unlock()
		failing.Store(true)
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, unix.ENOBUFS) {
			broken = true
		}
		if failed < 0 || i < failed {
			failed, ferr = i, err
		}
	}
	for w, s := range socks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failing.Load() && ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(msgs) {
					return
				}
				s.seq++
				err := s.dump(s.seq, msgs[i], func(h netlink.Header, data []byte) error {
					return fn(w, i, h, data)
				})
				if err != nil {
					fail(i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	fired := !stop()
	c.give(socks, broken || fired)

	if fired || ctx.Err() != nil {
		// ctx ended: whether it cut a request short or stopped the rest
		// before they started, the call did not finish.
		if failed >= 0 && !errors.Is(ferr, os.ErrDeadlineExceeded) {
			return failed, ferr
		}
		if failed < 0 && int(next.Load()) >= len(msgs) {
			return -1, nil // every request finished before ctx ended
		}
		cerr := ctx.Err()
		if cerr == nil {
			cerr = context.DeadlineExceeded
		}
		return failed, &ctxError{"dump", cerr}
	}
	if errors.Is(ferr, os.ErrDeadlineExceeded) {
		return failed, &ctxError{"dump", context.DeadlineExceeded}
	}
	return failed, ferr
}

// take returns n sockets for DumpEach: kept ones first, then new ones.
func (c *Conn) take(n int) ([]*sock, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	socks := make([]*sock, 0, n)
	for len(socks) < n && len(c.spare) > 0 {
		last := len(c.spare) - 1
		socks = append(socks, c.spare[last])
		c.spare = c.spare[:last]
	}
	for len(socks) < n {
		s, err := c.dial()
		if err != nil {
			c.spare = append(c.spare, socks...)
			return nil, err
		}
		socks = append(socks, s)
	}
	return socks, nil
}

// give returns DumpEach's sockets to the Conn, or closes them when the Conn
// was closed meanwhile or their state is unknown (a call cut short, replies
// lost).
func (c *Conn) give(socks []*sock, discard bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range socks {
		if discard || c.closed {
			s.nc.Close()
			continue
		}
		c.spare = append(c.spare, s)
	}
}
