package nlconn

import (
	"context"
	"fmt"

	"github.com/mdlayher/netlink"
)

// Batch sends msgs packed many to a sendmsg, with NLM_F_ACK only on the last
// request of each send, and reads the replies until that ack. The kernel
// processes every request of a send in order and answers an un-acked request
// only when it fails, with an error carrying the request's sequence number,
// which Batch maps back to its index: errs[i] is msgs[i]'s outcome (nil for
// success), and errs has len(msgs) entries whenever err is nil.
//
// err reports what stopped the batch as a whole: the context, a send or
// receive failure, or lost replies (ErrRepliesLost). Then requests whose
// outcome is unknown have errors wrapping err, and those never sent wrap
// ErrNotSent. A request that failed does not stop the batch unless
// opt.StopOnError is set; err stays nil in that case too: look at errs.
//
// The messages' Header Length, Sequence and PID are ignored and filled in on
// the wire; Type and Flags are kept (netlink.Request is added). A message too
// large for one send is refused before anything is sent.
func (c *Conn) Batch(ctx context.Context, msgs []netlink.Message, opt BatchOptions) ([]error, error) {
	errs := make([]error, len(msgs))
	if len(msgs) == 0 {
		return errs, nil
	}
	next := 0 // first request not yet sent
	err := c.do(ctx, "batch", func(s *sock) error {
		maxMsgs, maxBytes := batchLimits(opt.MaxMessages, s.rcvbuf, s.sndbuf)
		for i, m := range msgs {
			if n := wireSize(m.Data); n > maxBytes {
				return fmt.Errorf("netlink batch: request %d is %d bytes, more than one send may carry (%d)", i, n, maxBytes)
			}
		}
		for next < len(msgs) {
			start := next
			first := c.seq + 1
			s.out = s.out[:0]
			last := 0 // offset of the last message in s.out
			for next < len(msgs) && next-start < maxMsgs {
				m := msgs[next]
				if next > start && len(s.out)+wireSize(m.Data) > maxBytes {
					break
				}
				last = len(s.out)
				c.seq++
				s.out = appendMessage(s.out, m.Header.Type, m.Header.Flags|netlink.Request, c.seq, s.pid, m.Data)
				next++
			}
			setAck(s.out[last:])
			lastSeq := c.seq
			failed, err := s.sendAndCollect(s.out, first, lastSeq, errs[start:next])
			if err != nil {
				for i := start; i < next; i++ {
					if errs[i] == nil {
						errs[i] = fmt.Errorf("outcome unknown: %w", err)
					}
				}
				return err
			}
			if failed && opt.StopOnError {
				break
			}
		}
		return nil
	})
	for i := next; i < len(msgs); i++ {
		if err != nil {
			errs[i] = fmt.Errorf("%w: %w", ErrNotSent, err)
		} else {
			errs[i] = fmt.Errorf("%w: an earlier request failed", ErrNotSent)
		}
	}
	if err != nil {
		return errs, err
	}
	return errs, nil
}

// sendAndCollect sends one packed buffer whose requests carry sequence numbers
// first..last and reads replies until the ack of last, storing each failure in
// errs[seq-first]. It reports whether any request failed.
func (s *sock) sendAndCollect(b []byte, first, last uint32, errs []error) (bool, error) {
	if err := s.send(b); err != nil {
		return false, err
	}
	failed := false
	for {
		buf, err := s.recv()
		if err != nil {
			return failed, err
		}
		for len(buf) > 0 {
			h, data, rest, err := nextMessage(buf)
			if err != nil {
				return failed, fmt.Errorf("netlink receive: %w", err)
			}
			buf = rest
			off := h.Sequence - first // wraps for sequences before first
			if h.Type != nlmsgError || off > last-first {
				continue // a reply to something else, or data: ignore
			}
			kerr, err := parseError(h, data)
			if err != nil {
				return failed, fmt.Errorf("netlink receive: %w", err)
			}
			if kerr != nil {
				errs[off] = kerr
				failed = true
			}
			if h.Sequence == last {
				return failed, nil
			}
		}
	}
}
