package healthcheck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"
)

// checkerCore is what the probes need of a Checker: a way to open sockets
// in the chosen namespace.
type checkerCore struct {
	ns     *nsSockets // nil: the caller's namespace
	dialer net.Dialer
}

// dial opens a connected socket ("tcp" or "udp") to addr in the Checker's
// namespace; ctx bounds the connect.
func (c *checkerCore) dial(ctx context.Context, network string, addr netip.AddrPort) (net.Conn, error) {
	if c.ns == nil {
		conn, err := c.dialer.DialContext(ctx, network, addr.String())
		if err != nil {
			return nil, ctxErr(ctx, err)
		}
		return conn, nil
	}
	conn, err := c.ns.dial(ctx, network, addr)
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	return conn, nil
}

// deadlineFromContext gives conn ctx's deadline and makes ctx's
// cancellation end conn's blocked calls; stop undoes the latter.
func deadlineFromContext(ctx context.Context, conn net.Conn) (stop func() bool) {
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	return context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
}

// ctxErr makes err also wrap ctx's error when ctx ended: a timeout then
// matches context.DeadlineExceeded as well as the socket's error. A
// socket's deadline, set from ctx's, may fire before ctx's own timer does.
func ctxErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	cerr := ctx.Err()
	if d, ok := ctx.Deadline(); cerr == nil && ok && !time.Now().Before(d) && errors.Is(err, os.ErrDeadlineExceeded) {
		cerr = context.DeadlineExceeded
	}
	if cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}
