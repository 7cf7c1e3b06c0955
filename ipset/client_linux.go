package ipset

import (
	"context"
	"fmt"
	"time"

	"github.com/ipvskit/ipvskit/internal/nlconn"
	"golang.org/x/sys/unix"
)

func newClient(cfg *Config) (*client, error) {
	conn, err := nlconn.Dial(unix.NETLINK_NETFILTER, &nlconn.Config{NetNS: int(cfg.NetNS)})
	if err != nil {
		return nil, fmt.Errorf("ipset: dialing netfilter netlink: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := initClient(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}
