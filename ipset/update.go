package ipset

import (
	"context"
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"
)

// Change is what Update adds to and deletes from one set. Set describes the
// set as it was created (name, type, family): entries are checked against it
// instead of asking the kernel for the set's header.
type Change struct {
	Set Set
	Add []Entry
	Del []Entry
}

// update sends every change's additions, then its deletions, packed into
// as few sends as the socket allows, one ack per send: the delta of many
// sets costs one round trip instead of two per set (a header read and a
// batch). Everything is validated first; nothing is sent if anything is
// invalid. Present entries on add and absent ones on delete are not errors.
func (c *client) update(ctx context.Context, changes []Change) error {
	type run struct {
		set   *Set
		cmd   uint8
		items []Entry
	}
	var runs []run
	for ci := range changes {
		ch := &changes[ci]
		if err := ch.Set.Validate(); err != nil {
			return fmt.Errorf("changes[%d]: %w", ci, err)
		}
		for _, part := range []struct {
			name    string
			cmd     uint8
			entries []Entry
		}{{"add", cmdAdd, ch.Add}, {"del", cmdDel, ch.Del}} {
			for i := range part.entries {
				if err := part.entries[i].validate(&ch.Set, fmt.Sprintf("changes[%d].%s[%d]", ci, part.name, i)); err != nil {
					return err
				}
			}
			if len(part.entries) > 0 {
				runs = append(runs, run{&ch.Set, part.cmd, part.entries})
			}
		}
	}
	// Additions of every set first, then deletions, in the caller's order.
	var msgs []netlink.Message
	type owner struct {
		r      *run
		lo, hi int
	}
	var owners []owner
	for _, cmd := range []uint8{cmdAdd, cmdDel} {
		for ri := range runs {
			r := &runs[ri]
			if r.cmd != cmd {
				continue
			}
			bounds := pack(r.items)
			for i := 0; i+1 < len(bounds); i++ {
				msgs = append(msgs, adtRequest(c.proto, cmd, r.set.Name, r.items[bounds[i]:bounds[i+1]], uint32(bounds[i])+1, false))
				owners = append(owners, owner{r, bounds[i], bounds[i+1]})
			}
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	errs, err := c.t.Batch(ctx, msgs, c.batchOptions(2*adtMessageBytes+1024))
	if err != nil {
		return wrapErr("update", "", 0, err)
	}
	// As in send: a failed packed message is resent one entry per message,
	// so each failing entry comes back with its own error.
	var out []error
	for i, e := range errs {
		if e == nil {
			continue
		}
		o := owners[i]
		op := "add"
		if o.r.cmd == cmdDel {
			op = "del"
		}
		if err := c.sendSingles(ctx, op, o.r.cmd, o.r.set, o.r.items[o.lo:o.hi], false); err != nil {
			out = append(out, err)
		}
	}
	return errors.Join(out...)
}
