package dummy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"

	"golang.org/x/sys/unix"
)

// probe sends RTM_NEWLINK (create, exclusive) of kind dummy with a
// multicast IFLA_ADDRESS. rtnetlink runs the kind's validate hook, which
// refuses that address with EADDRNOTAVAIL, before it looks at the name or
// creates anything; an unknown kind is EOPNOTSUPP instead.
func (c *client) probe(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.begin(ctx); err != nil {
		return wrap(ctx, "probe", "", netip.Prefix{}, err)
	}
	name := fmt.Sprintf("ipvskit-p%06x", rand.Uint32()&0xffffff)
	multicast := []byte{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}
	err := c.createLink(ctx, name, "", multicast)
	switch {
	case errors.Is(err, unix.EADDRNOTAVAIL):
		return nil
	case errors.Is(err, unix.EOPNOTSUPP):
		return dummyLinks().Missing(err)
	case err == nil:
		// A kernel that accepted the address made the link: undo it.
		l, derr := c.getLink(ctx, name)
		if derr == nil {
			derr = c.deleteLink(ctx, l.index)
		}
		return errors.Join(fmt.Errorf("dummy: probe: the kernel accepted a multicast address for link %s, deleted again", name), derr)
	}
	return wrap(ctx, "probe", name, netip.Prefix{}, err)
}
