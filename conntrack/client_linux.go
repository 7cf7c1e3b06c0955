package conntrack

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/ipvskit/ipvskit/internal/nlconn"
)

// A conntrack delete request is about 100 bytes; the default buffers of
// nlconn are plenty.
func dial(cfg *Config) (nlconn.Transport, error) {
	c, err := nlconn.Dial(unix.NETLINK_NETFILTER, &nlconn.Config{NetNS: int(cfg.NetNS)})
	if errors.Is(err, unix.EPROTONOSUPPORT) {
		return nil, fmt.Errorf("conntrack: the kernel has no netfilter netlink (module nfnetlink): %w (%w)", ErrNotSupported, err)
	}
	if err != nil {
		return nil, fmt.Errorf("conntrack: dialing netfilter netlink: %w", err)
	}
	return c, nil
}
