package healthcheck

import (
	"context"
	"net/netip"
)

// checkTCP connects and closes.
func (c *checkerCore) checkTCP(ctx context.Context, addr netip.AddrPort) error {
	conn, err := c.dial(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}
