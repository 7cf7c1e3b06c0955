package nlconn

import (
	"context"
	"fmt"

	"github.com/mdlayher/netlink"
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
		seq := c.seq
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
	})
}
