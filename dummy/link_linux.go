//go:build linux

package dummy

import (
	"context"
	"errors"
	"fmt"

	mnl "github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The link requests, over the client's rtnetlink socket (c.nl). Each is
// called with c.mu held after c.begin; messages are built in link_wire.go.

// getLink asks the kernel for the link called name, of any type; "no
// such link" matches fs.ErrNotExist.
func (c *client) getLink(ctx context.Context, name string) (link, error) {
	req := mnl.Message{Header: mnl.Header{Type: rtmGetLink}, Data: getLinkMessage(name)}
	msgs, err := c.nl.Execute(ctx, req)
	if errors.Is(err, unix.ENODEV) {
		return link{}, notExist{fmt.Errorf("no such link: %w", unix.ENODEV)}
	}
	if err != nil {
		return link{}, err
	}
	for _, m := range msgs {
		if m.Header.Type != rtmNewLink {
			continue
		}
		l, ok := parseLink(m.Data)
		if !ok {
			return link{}, fmt.Errorf("the kernel sent a malformed link message for %q", name)
		}
		return l, nil
	}
	return link{}, fmt.Errorf("the kernel answered no link message for %q", name)
}

// createLink creates a dummy link called name (exclusively), with alias
// (which the kernel ignores) and the hardware address hw if not "" and nil.
func (c *client) createLink(ctx context.Context, name, alias string, hw []byte) error {
	_, err := c.nl.Execute(ctx, mnl.Message{
		Header: mnl.Header{Type: rtmNewLink, Flags: mnl.Create | mnl.Excl},
		Data:   newLinkMessage(name, alias, hw),
	})
	return err
}

// setLinkAttr sets one string attribute of link index (IFLA_IFALIAS,
// IFLA_IFNAME).
func (c *client) setLinkAttr(ctx context.Context, index int, typ uint16, v string) error {
	_, err := c.nl.Execute(ctx, mnl.Message{Header: mnl.Header{Type: rtmSetLink}, Data: setLinkAttrMessage(index, typ, v)})
	return err
}

// setLinkFlag sets flag on link index with the request type typ
// (RTM_SETLINK or RTM_NEWLINK), leaving the other flags alone.
func (c *client) setLinkFlag(ctx context.Context, typ mnl.HeaderType, index int, flag uint32) error {
	_, err := c.nl.Execute(ctx, mnl.Message{Header: mnl.Header{Type: typ}, Data: setLinkFlagsMessage(index, flag)})
	return err
}

// deleteLink deletes link index.
func (c *client) deleteLink(ctx context.Context, index int) error {
	_, err := c.nl.Execute(ctx, mnl.Message{Header: mnl.Header{Type: rtmDelLink}, Data: delLinkMessage(index)})
	return err
}
