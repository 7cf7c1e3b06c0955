//go:build linux

package dummy

import (
	"context"
	"encoding/binary"
	"errors"
	"net/netip"

	mnl "github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/ipvskit/ipvskit/internal/nlattr"
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
	var index int
	if err == nil {
		link, lerr := c.lookup(name)
		if lerr != nil {
			err = lerr
		} else {
			index = link.Attrs().Index
		}
	}
	if err != nil {
		return wrap(ctx, "update", name, netip.Prefix{}, err)
	}
	if c.nl == nil {
		return wrap(ctx, "update", name, netip.Prefix{}, errors.New("no batch socket"))
	}
	msgs := make([]mnl.Message, 0, len(add)+len(remove))
	for _, a := range add {
		// CREATE|REPLACE: binding an address that is there already succeeds.
		msgs = append(msgs, addrMessage(unix.RTM_NEWADDR, mnl.Create|mnl.Replace, index, a))
	}
	for _, a := range remove {
		msgs = append(msgs, addrMessage(unix.RTM_DELADDR, 0, index, a))
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

// addrMessage is an RTM_NEWADDR or RTM_DELADDR request for a as a host
// address (/32, /128) on link index: struct ifaddrmsg, then IFA_LOCAL and
// IFA_ADDRESS (include/uapi/linux/if_addr.h). IPv6 addresses skip duplicate
// address detection, as Bind's do.
func addrMessage(typ uint16, flags mnl.HeaderFlags, index int, a netip.Addr) mnl.Message {
	fam, flag := byte(unix.AF_INET), byte(0)
	if a.Is6() {
		fam, flag = unix.AF_INET6, unix.IFA_F_NODAD
	}
	raw := a.AsSlice()
	b := make([]byte, 8, 8+2*(4+16))
	b[0], b[1], b[2], b[3] = fam, byte(a.BitLen()), flag, unix.RT_SCOPE_UNIVERSE
	binary.NativeEndian.PutUint32(b[4:8], uint32(index))
	e := nlattr.NewEncoder(b)
	e.Attr(unix.IFA_LOCAL, raw)
	e.Attr(unix.IFA_ADDRESS, raw)
	return mnl.Message{Header: mnl.Header{Type: mnl.HeaderType(typ), Flags: flags}, Data: e.Bytes()}
}
