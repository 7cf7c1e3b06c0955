package conntrack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/ipvskit/ipvskit/internal/kerr"

	"github.com/mdlayher/netlink"
)

// msgGetStatsCPU is IPCTNL_MSG_CT_GET_STATS_CPU: per-CPU counters, a few
// bytes per CPU, read-only.
const msgGetStatsCPU = 4

// Probe reports whether the kernel answers ctnetlink in the Client's
// namespace, changing nothing: it reads the per-CPU conntrack counters
// (as conntrack -S does), which costs a few bytes per CPU whatever the
// table holds. If the kernel has no ctnetlink the error wraps
// ErrNotSupported and names the module, nf_conntrack_netlink. The Client
// asks once and keeps the answer (present or missing; any other error, a
// closed Client's among them, is not kept): a new Client asks again.
func (c *Client) Probe(ctx context.Context) error { return c.probes.Run(ctx, ctnetlink(), c.probe) }

// ctnetlink is conntrack netlink, the feature Probe asks for.
func ctnetlink() kerr.Feature {
	return kerr.Feature{Name: "conntrack netlink (ctnetlink)", Module: "nf_conntrack_netlink"}
}

func (c *Client) probe(ctx context.Context) error {
	if c.c.isClosed() {
		return &Error{Op: "probe", Err: fs.ErrClosed}
	}
	req := netlink.Message{
		Header: netlink.Header{Type: msgType(msgGetStatsCPU), Flags: netlink.Dump},
		Data:   []byte{byte(IPv4), nfnetlinkV0, 0, 0},
	}
	err := c.c.conn.Dump(ctx, req, func(netlink.Header, []byte) error { return nil })
	if err == nil {
		return nil
	}
	err = dumpCause(err)
	if errors.Is(err, ErrNotSupported) {
		return ctnetlink().Missing(err)
	}
	return fmt.Errorf("conntrack: probe: %w", err)
}
