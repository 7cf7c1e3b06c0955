//go:build linux

package dummy

import (
	"context"
	"errors"
	"net/netip"

	mnl "github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/ipvskit/ipvskit/internal/nlconn"
)

// update binds add and unbinds remove on the link name through the batch
// path: one link lookup, then address requests packed many to a send with
// one ack per send. An address already bound (add) or not bound (remove) is
// not an error.
func (c *client) update(ctx context.Context, name string, add, remove []netip.Addr) error {
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
	if err != nil {
		return wrap(ctx, "update", name, netip.Prefix{}, err)
	}
	index := l.index
	msgs := make([]mnl.Message, 0, len(add)+len(remove))
	for _, a := range add {
		// CREATE|REPLACE: binding an address that is there already succeeds.
		msgs = append(msgs, mnl.Message{Header: mnl.Header{Type: rtmNewAddr, Flags: mnl.Create | mnl.Replace}, Data: addrMessage(index, hostPrefix(a))})
	}
	for _, a := range remove {
		msgs = append(msgs, mnl.Message{Header: mnl.Header{Type: rtmDelAddr}, Data: addrMessage(index, hostPrefix(a))})
	}
	errs, err := c.nl.Batch(ctx, msgs, nlconn.BatchOptions{})
	if err != nil {
		return wrap(ctx, "update", name, netip.Prefix{}, err)
	}
	var failed []error
	for i, e := range errs {
		if e == nil {
			continue
		}
		op, a := "bind", netip.Addr{}
		if i < len(add) {
			a = add[i]
		} else {
			op, a = "unbind", remove[i-len(add)]
			if errors.Is(e, unix.EADDRNOTAVAIL) {
				continue // not bound: nothing to remove
			}
		}
		failed = append(failed, wrap(ctx, op, name, hostPrefix(a), e))
	}
	return errors.Join(failed...)
}
