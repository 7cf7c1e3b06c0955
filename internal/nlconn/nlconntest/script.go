// Package nlconntest is a scripted stand-in for a netlink socket
// (nlconn.Transport), for unit tests of ipvskit's kernel clients without a
// kernel. A Script holds the calls a test expects, in order; each checks its
// requests and answers with scripted replies or errno errors, and the test
// fails on any call the script did not expect, or if a scripted call never
// came.
//
//	s := nlconntest.New(t,
//		nlconntest.Call{Op: nlconntest.Execute, Requests: []nlconntest.Request{{
//			Check: nlconntest.GenlCommand(1),
//			Err:   nlconntest.Errno(unix.EEXIST),
//		}}},
//	)
package nlconntest

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"

	"github.com/ipvskit/ipvskit/internal/nlconn"
	"github.com/mdlayher/netlink"
)

// Op is the Transport method a Call expects.
type Op int

// The methods of nlconn.Transport that send requests.
const (
	Execute Op = iota + 1
	Dump
	Batch
)

func (o Op) String() string {
	switch o {
	case Execute:
		return "Execute"
	case Dump:
		return "Dump"
	case Batch:
		return "Batch"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Request is one expected request and the kernel's answer to it.
type Request struct {
	// Check, if not nil, inspects the request; an error it returns fails
	// the test (see GenlCommand, HeaderType, All).
	Check func(m netlink.Message) error
	// Replies are the messages the kernel answers with (Execute, Dump).
	Replies []netlink.Message
	// Err is the kernel's refusal of the request, usually Errno(...):
	// Execute and Dump return it, Batch puts it in the request's slot.
	Err error
}

// Call is one expected call of the transport.
type Call struct {
	Op Op
	// Requests holds one Request for Execute and Dump, one per message for
	// Batch.
	Requests []Request
	// Options, if not nil, is what a Batch call must be given.
	Options *nlconn.BatchOptions
	// Err, if not nil, is the call's own failure (a context, a socket):
	// the call returns it as its error, after the replies of a dump, and a
	// Batch's requests without an Err of their own get one wrapping it.
	Err error
}

// Script is a scripted nlconn.Transport. It is safe for concurrent use;
// calls are matched in the order they arrive.
type Script struct {
	tb testing.TB

	mu     sync.Mutex
	calls  []Call
	next   int
	closed bool
	seen   []netlink.Message
}

var _ nlconn.Transport = (*Script)(nil)

// New returns a Script expecting calls, in order. When tb ends, it fails tb
// if some of them were never made.
func New(tb testing.TB, calls ...Call) *Script {
	tb.Helper()
	s := &Script{tb: tb, calls: calls}
	tb.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.next < len(s.calls) {
			tb.Errorf("nlconntest: %d scripted calls never made; the first: %s of %d requests",
				len(s.calls)-s.next, s.calls[s.next].Op, len(s.calls[s.next].Requests))
		}
	})
	return s
}

// Errno is the kernel refusing a request with e (an *nlconn.Error).
func Errno(e syscall.Errno) error { return &nlconn.Error{Errno: e} }

// Seen returns every request received so far, in order (a batch's one by
// one).
func (s *Script) Seen() []netlink.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]netlink.Message(nil), s.seen...)
}

// Closed reports whether Close was called.
func (s *Script) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// take returns the next scripted call, checked against op and msgs. s.mu
// is held. A mismatch fails the test and is returned as an error.
func (s *Script) take(op Op, msgs []netlink.Message) (Call, error) {
	s.tb.Helper()
	s.seen = append(s.seen, msgs...)
	fail := func(format string, args ...any) (Call, error) {
		err := fmt.Errorf("nlconntest: call %d (%s): %s", s.next, op, fmt.Sprintf(format, args...))
		s.tb.Error(err)
		return Call{}, err
	}
	if s.closed {
		return Call{}, nlconn.ErrClosed
	}
	if s.next >= len(s.calls) {
		return fail("not scripted (the script has %d calls)", len(s.calls))
	}
	c := s.calls[s.next]
	s.next++
	if c.Op != op {
		return fail("the script expects %s", c.Op)
	}
	if len(c.Requests) != len(msgs) {
		return fail("%d requests, the script expects %d", len(msgs), len(c.Requests))
	}
	for i, r := range c.Requests {
		if r.Check == nil {
			continue
		}
		if err := r.Check(msgs[i]); err != nil {
			return fail("request %d: %v", i, err)
		}
	}
	return c, nil
}

// Execute answers m with the next call's replies or error.
func (s *Script) Execute(ctx context.Context, m netlink.Message) ([]netlink.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.take(Execute, []netlink.Message{m})
	if err != nil {
		return nil, err
	}
	if c.Requests[0].Err != nil {
		return nil, c.Requests[0].Err
	}
	return c.Requests[0].Replies, c.Err
}

// Dump calls fn with the next call's replies, then returns its error.
func (s *Script) Dump(ctx context.Context, m netlink.Message, fn func(h netlink.Header, data []byte) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.take(Dump, []netlink.Message{m})
	if err != nil {
		return err
	}
	if c.Requests[0].Err != nil {
		return c.Requests[0].Err
	}
	var ferr error
	for _, r := range c.Requests[0].Replies {
		if ferr == nil {
			ferr = fn(r.Header, r.Data)
		}
	}
	if c.Err != nil {
		return c.Err
	}
	return ferr
}

// DumpEach answers each of msgs, in index order, as Dump does: each takes
// one scripted Dump call. It runs them one at a time, all as w 0, and stops
// at the first error, returning it with its index (the calls scripted for
// the requests after it are then never made).
func (s *Script) DumpEach(ctx context.Context, msgs []netlink.Message, parallel int, fn func(w, i int, h netlink.Header, data []byte) error) (int, error) {
	for i, m := range msgs {
		err := s.Dump(ctx, m, func(h netlink.Header, data []byte) error { return fn(0, i, h, data) })
		if err != nil {
			return i, err
		}
	}
	return -1, nil
}

// Batch answers each message with its Request's Err.
func (s *Script) Batch(ctx context.Context, msgs []netlink.Message, opt nlconn.BatchOptions) ([]error, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.take(Batch, msgs)
	if err != nil {
		return nil, err
	}
	if c.Options != nil && *c.Options != opt {
		err := fmt.Errorf("nlconntest: batch options %+v, the script expects %+v", opt, *c.Options)
		s.tb.Error(err)
		return nil, err
	}
	errs := make([]error, len(msgs))
	for i, r := range c.Requests {
		errs[i] = r.Err
		if errs[i] == nil && c.Err != nil {
			errs[i] = fmt.Errorf("outcome unknown: %w", c.Err)
		}
	}
	return errs, c.Err
}

// Buffers reports 8 MiB each way, nlconn's default.
func (s *Script) Buffers() (rcv, snd int, err error) {
	return nlconn.DefaultBufferSize, nlconn.DefaultBufferSize, nil
}

// Close marks the Script closed: later calls return nlconn.ErrClosed.
func (s *Script) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
