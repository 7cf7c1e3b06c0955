package ipset

import (
	"context"
	"errors"
	"fmt"

	"github.com/ipvskit/ipvskit/internal/nlconn"
	"github.com/mdlayher/netlink"
)

// adtMessageBytes bounds the size of one packed add/del message. The kernel
// answers a failing element of a packed message with an error that echoes
// the whole message, so the receive buffer must hold one such echo per
// message of a send; small messages keep that affordable.
const adtMessageBytes = 8 << 10

// maxReportedErrors is how many per-entry errors a batch reports one by one.
const maxReportedErrors = 16

// send adds or deletes entries (already validated against s): packed many
// per message, many messages per send, one ack per send. In strict mode
// (present entries on add, or absent ones on del, are errors) it sends one
// entry per message so that every error maps to exactly one entry.
func (c *client) send(ctx context.Context, cmd uint8, s *Set, entries []Entry, strict bool) error {
	if len(entries) == 0 {
		return nil
	}
	op := "add"
	if cmd == cmdDel {
		op = "del"
	}
	if strict {
		return c.sendSingles(ctx, op, cmd, s, entries, true)
	}

	bounds := pack(entries) // msgs[i] holds entries[bounds[i]:bounds[i+1]]
	msgs := make([]netlink.Message, len(bounds)-1)
	for i := range msgs {
		msgs[i] = adtRequest(c.proto, cmd, s.Name, entries[bounds[i]:bounds[i+1]], uint32(bounds[i])+1, false)
	}

	errs, err := c.t.Batch(ctx, msgs, c.batchOptions(2*adtMessageBytes+1024))
	if err != nil {
		return wrapErr(op, s.Name, s.Type, err)
	}
	// Work-around (nlconn gap): a packed message stops at its first failing
	// element, and the kernel names that element only in the LINENO of the
	// request it echoes back, which nlconn.Error does not expose. So the
	// entries of each failed message are sent again one per message: those
	// already applied are applied again (idempotent here), the failing one
	// fails again with its own error, and the rest are applied.
	var retry []Entry
	for i, e := range errs {
		if e != nil {
			retry = append(retry, entries[bounds[i]:bounds[i+1]]...)
		}
	}
	if len(retry) == 0 {
		return nil
	}
	return c.sendSingles(ctx, op, cmd, s, retry, false)
}

// pack splits entries into runs that fit in one message of at most
// adtMessageBytes: run i is entries[b[i]:b[i+1]] of the returned b.
func pack(entries []Entry) []int {
	b := []int{0}
	for start := 0; start < len(entries); {
		end, size := start, 64
		for end < len(entries) && (end == start || size+elemSize(&entries[end]) <= adtMessageBytes) {
			size += elemSize(&entries[end])
			end++
		}
		b = append(b, end)
		start = end
	}
	return b
}

// sendSingles sends one entry per message and returns one *Error per failed
// entry, joined.
func (c *client) sendSingles(ctx context.Context, op string, cmd uint8, s *Set, entries []Entry, strict bool) error {
	msgs := make([]netlink.Message, len(entries))
	for i := range entries {
		msgs[i] = elemRequest(c.proto, cmd, s.Name, &entries[i], strict)
	}
	errs, err := c.t.Batch(ctx, msgs, c.batchOptions(0))
	if err != nil {
		return wrapErr(op, s.Name, s.Type, err)
	}
	var (
		out    []error
		failed int
	)
	for i, e := range errs {
		if e == nil {
			continue
		}
		failed++
		if len(out) < maxReportedErrors {
			we := wrapErr(op, s.Name, s.Type, e)
			var ie *Error
			if errors.As(we, &ie) {
				ie.Entry = entries[i].format(s.Type)
			}
			out = append(out, we)
		}
	}
	if failed > len(out) {
		out = append(out, fmt.Errorf("ipset %s %s: %d more entries failed", op, s.Name, failed-len(out)))
	}
	return errors.Join(out...)
}

// batchOptions bounds the requests per send so that an error reply for each
// of them fits in the receive buffer; perFailure is what one such reply may
// cost (0: the capped error of a one-element request, which nlconn already
// accounts for).
func (c *client) batchOptions(perFailure int) nlconn.BatchOptions {
	if perFailure == 0 {
		return nlconn.BatchOptions{}
	}
	rcv, _, err := c.t.Buffers()
	if err != nil || rcv <= 0 {
		return nlconn.BatchOptions{MaxMessages: 1}
	}
	return nlconn.BatchOptions{MaxMessages: max(1, rcv/perFailure)}
}
