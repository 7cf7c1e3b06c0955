//go:build !linux

package nlconn

import (
	"context"
	"fmt"
	"runtime"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/mdlayher/netlink"
)

// Conn is a netlink socket; netlink exists only on Linux.
type Conn struct{}

var errOS = fmt.Errorf("netlink on %s: %w", runtime.GOOS, inet.ErrNotSupported)

// Dial returns an error wrapping ErrNotSupported: netlink exists only on Linux.
func Dial(family int, cfg *Config) (*Conn, error) { return nil, errOS }

// Close does nothing.
func (c *Conn) Close() error { return nil }

// Buffers returns an error wrapping ErrNotSupported.
func (c *Conn) Buffers() (rcv, snd int, err error) { return 0, 0, errOS }

// Execute returns an error wrapping ErrNotSupported.
func (c *Conn) Execute(ctx context.Context, m netlink.Message) ([]netlink.Message, error) {
	return nil, errOS
}

// Batch returns an error wrapping ErrNotSupported.
func (c *Conn) Batch(ctx context.Context, msgs []netlink.Message, opt BatchOptions) ([]error, error) {
	return nil, errOS
}

// Dump returns an error wrapping ErrNotSupported.
func (c *Conn) Dump(ctx context.Context, m netlink.Message, fn func(h netlink.Header, data []byte) error) error {
	return errOS
}

// DumpEach returns an error wrapping ErrNotSupported.
func (c *Conn) DumpEach(ctx context.Context, msgs []netlink.Message, parallel int, fn func(w, i int, h netlink.Header, data []byte) error) (int, error) {
	return -1, errOS
}
