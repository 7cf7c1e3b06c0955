package ipvs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/ipvskit/ipvskit/internal/nlattr"
	"github.com/ipvskit/ipvskit/internal/nlconn"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// client is the Linux implementation behind Client.
type client struct {
	conn   nlconn.Transport
	family netlink.HeaderType // the IPVS generic netlink family's ID
}

func newClient(cfg *Config) (*client, error) {
	conn, err := nlconn.Dial(unix.NETLINK_GENERIC, &nlconn.Config{NetNS: int(cfg.NetNS)})
	if err != nil {
		return nil, fmt.Errorf("ipvs: %w", err)
	}
	c, err := initClient(context.Background(), conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// initClient resolves the IPVS family over t: the seam unit tests drive
// with a scripted transport.
func initClient(ctx context.Context, t nlconn.Transport) (*client, error) {
	id, err := resolveFamily(ctx, t)
	if err != nil {
		return nil, err
	}
	return &client{conn: t, family: id}, nil
}

// resolveFamily asks the generic netlink controller for the IPVS family's ID
// (CTRL_CMD_GETFAMILY, include/uapi/linux/genetlink.h).
func resolveFamily(ctx context.Context, conn nlconn.Transport) (netlink.HeaderType, error) {
	e := nlattr.NewEncoder([]byte{unix.CTRL_CMD_GETFAMILY, 1, 0, 0}) // struct genlmsghdr, version 1
	e.String(unix.CTRL_ATTR_FAMILY_NAME, genlName)
	msgs, err := conn.Execute(ctx, netlink.Message{
		Header: netlink.Header{Type: unix.GENL_ID_CTRL},
		Data:   e.Bytes(),
	})
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("ipvs: the kernel has no %q generic netlink family (module ip_vs not loaded): %w", genlName, ErrNotSupported)
	}
	if err != nil {
		return 0, fmt.Errorf("ipvs: resolving the %q generic netlink family: %w", genlName, err)
	}
	for _, m := range msgs {
		attrs, err := genlAttrs(m.Data)
		if err != nil {
			return 0, fmt.Errorf("ipvs: resolving the %q generic netlink family: %w", genlName, err)
		}
		ad := nlattr.NewDecoder(attrs)
		for ad.Next() {
			if ad.Type() == unix.CTRL_ATTR_FAMILY_ID {
				if id := ad.Uint16(); ad.Err() == nil {
					return netlink.HeaderType(id), nil
				}
			}
		}
		if err := ad.Err(); err != nil {
			return 0, fmt.Errorf("ipvs: resolving the %q generic netlink family: %w", genlName, err)
		}
	}
	return 0, fmt.Errorf("ipvs: the controller's reply has no family ID for %q", genlName)
}

func (c *client) close() error { return c.conn.Close() }

// exec sends one request and returns the replies' payloads.
func (c *client) exec(ctx context.Context, op, object string, flags netlink.HeaderFlags, payload []byte) ([][]byte, error) {
	msgs, err := c.conn.Execute(ctx, netlink.Message{
		Header: netlink.Header{Type: c.family, Flags: flags},
		Data:   payload,
	})
	if err != nil {
		return nil, newError(op, object, err)
	}
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		out[i] = m.Data
	}
	return out, nil
}

func (c *client) serviceOp(ctx context.Context, kind OpKind, s Service) error {
	op := Op{Kind: kind, Service: s}
	var err error
	if kind == OpDeleteService {
		err = validateKey(s.Key())
	} else {
		err = validateService(s)
	}
	if err != nil {
		return &Error{Op: kind.String(), Object: op.object(), Err: err}
	}
	return c.execOp(ctx, op)
}

func (c *client) destOp(ctx context.Context, kind OpKind, k ServiceKey, d Destination) error {
	op := Op{Kind: kind, Service: keyService(k), Destination: d}
	var err error
	if kind == OpDeleteDestination {
		err = validateDestKey(k, d.Key())
	} else {
		err = validateDest(k, d)
	}
	if err != nil {
		return &Error{Op: kind.String(), Object: op.object(), Err: err}
	}
	return c.execOp(ctx, op)
}

// execOp sends the request op, naming in its error what the errno alone
// would not (kernelCause).
func (c *client) execOp(ctx context.Context, op Op) error {
	_, err := c.conn.Execute(ctx, netlink.Message{
		Header: netlink.Header{Type: c.family},
		Data:   opRequest(op),
	})
	return opError(op, err)
}

func (c *client) getService(ctx context.Context, k ServiceKey) (ServiceInfo, error) {
	const op = "get service"
	if err := validateKey(k); err != nil {
		return ServiceInfo{}, &Error{Op: op, Object: k.String(), Err: err}
	}
	replies, err := c.exec(ctx, op, k.String(), 0, serviceRequest(cmdGetService, keyService(k), false))
	if err != nil {
		return ServiceInfo{}, serviceMissing(k, err)
	}
	if len(replies) != 1 {
		return ServiceInfo{}, &Error{Op: op, Object: k.String(), Err: fmt.Errorf("%d replies, want 1", len(replies))}
	}
	si, err := decodeService(replies[0])
	return si, newError(op, k.String(), err)
}

// The kernel resumes a multi-part service dump by position in one table
// that every namespace shares. A service another namespace adds between two
// parts can make it send one of ours again; one another namespace deletes
// can make it skip some of ours. A namespace holds one service per key, so a
// repeat is dropped; against skips, a dump too large for one part is read
// again, and again while a reading brings a service the earlier ones lacked
// (at most maxServiceDumps readings). A service that exists for the whole
// call is then missed only if every reading skips it.
const (
	// onePart is the most bytes of replies a dump certainly sends in one
	// part: the kernel's parts are at least NLMSG_GOODSIZE (about 3.7 KiB
	// with 4 KiB pages), headers included.
	onePart         = 3 << 10
	nlmsgHeaderLen  = 16
	maxServiceDumps = 4
)

func (c *client) services(ctx context.Context) ([]ServiceInfo, error) {
	const op = "list services"
	var (
		out  []ServiceInfo
		seen map[ServiceKey]bool
	)
	for n := 0; n < maxServiceDumps; n++ {
		replies, err := c.exec(ctx, op, "", netlink.Dump, emptyRequest(cmdGetService))
		if err != nil {
			return nil, err
		}
		if n == 0 {
			out = make([]ServiceInfo, 0, len(replies))
			seen = make(map[ServiceKey]bool, len(replies))
		}
		size, added := 0, false
		for _, r := range replies {
			size += len(r) + nlmsgHeaderLen
			si, err := decodeService(r)
			if err != nil {
				return nil, newError(op, "", err)
			}
			if k := si.Key().normal(); !seen[k] {
				seen[k], added = true, true
				out = append(out, si)
			}
		}
		if size <= onePart || (n > 0 && !added) {
			break
		}
	}
	return out, nil
}

func (c *client) destinations(ctx context.Context, k ServiceKey) ([]DestinationInfo, error) {
	const op = "list destinations"
	if err := validateKey(k); err != nil {
		return nil, &Error{Op: op, Object: k.String(), Err: err}
	}
	k = k.normal()
	replies, err := c.exec(ctx, op, k.String(), netlink.Dump, serviceRequest(cmdGetDest, keyService(k), false))
	if err != nil {
		return nil, err
	}
	out := make([]DestinationInfo, 0, len(replies))
	for _, r := range replies {
		di, err := decodeDest(r, k.Family)
		if err != nil {
			return nil, newError(op, k.String(), err)
		}
		out = append(out, di)
	}
	return out, nil
}

func (c *client) apply(ctx context.Context, b *Batch) error {
	if err := b.Err(); err != nil {
		return err
	}
	if b.Len() == 0 {
		return nil
	}
	errs, err := c.conn.Batch(ctx, batchMessages(b, c.family), nlconn.BatchOptions{StopOnError: b.StopOnError})
	be := &BatchError{Total: b.Len()}
	if err != nil {
		be.Err = newError("apply batch", "", err)
	}
	for i, e := range errs {
		if e != nil {
			op := b.At(i)
			be.Failed = append(be.Failed, FailedOp{Index: i, Op: op, Err: opError(op, e)})
		}
	}
	if be.Err == nil && len(be.Failed) == 0 {
		return nil
	}
	return be
}

func (c *client) timeouts(ctx context.Context) (Timeouts, error) {
	replies, err := c.exec(ctx, "get timeouts", "", 0, emptyRequest(cmdGetConfig))
	if err != nil {
		return Timeouts{}, err
	}
	if len(replies) != 1 {
		return Timeouts{}, &Error{Op: "get timeouts", Err: fmt.Errorf("%d replies, want 1", len(replies))}
	}
	t, err := decodeTimeouts(replies[0])
	return t, newError("get timeouts", "", err)
}

func (c *client) setTimeouts(ctx context.Context, t Timeouts) error {
	if err := validateTimeouts(t); err != nil {
		return &Error{Op: "set timeouts", Err: err}
	}
	_, err := c.exec(ctx, "set timeouts", "", 0, setConfigRequest(t))
	return err
}

func (c *client) info(ctx context.Context) (Info, error) {
	replies, err := c.exec(ctx, "get info", "", 0, emptyRequest(cmdGetInfo))
	if err != nil {
		return Info{}, err
	}
	if len(replies) != 1 {
		return Info{}, &Error{Op: "get info", Err: fmt.Errorf("%d replies, want 1", len(replies))}
	}
	i, err := decodeInfo(replies[0])
	return i, newError("get info", "", err)
}

func (c *client) daemons(ctx context.Context) ([]Daemon, error) {
	replies, err := c.exec(ctx, "list sync daemons", "", netlink.Dump, emptyRequest(cmdGetDaemon))
	if err != nil {
		return nil, err
	}
	out := make([]Daemon, 0, len(replies))
	for _, r := range replies {
		d, err := decodeDaemon(r)
		if err != nil {
			return nil, newError("list sync daemons", "", err)
		}
		out = append(out, d)
	}
	return out, nil
}

func (c *client) startDaemon(ctx context.Context, d Daemon) error {
	obj := d.State.String() + " sync daemon"
	if err := validateDaemon(d); err != nil {
		return &Error{Op: "start", Object: obj, Err: err}
	}
	_, err := c.exec(ctx, "start", obj, 0, daemonRequest(d))
	return err
}

func (c *client) stopDaemon(ctx context.Context, state DaemonState) error {
	obj := state.String() + " sync daemon"
	if state != Master && state != Backup {
		return &Error{Op: "stop", Object: obj, Err: invalid("state", state, "want Master or Backup")}
	}
	// The kernel answers DEL_DAEMON with no reply at all when the daemon's
	// thread had not yet run (kthread_stop returns -EINTR, which netlink
	// takes for "dump started" and so sends no ack): seen under emulation
	// when a stop follows a start closely. A request waiting for that ack
	// would wait forever. So the stop goes in one send with a fence behind
	// it, a non-dump GET_DAEMON, which the kernel always refuses
	// (EOPNOTSUPP: the command has no doit); its reply ends the batch, and
	// the stop's own error, if any, comes back as usual.
	errs, err := c.conn.Batch(ctx, []netlink.Message{
		{Header: netlink.Header{Type: c.family}, Data: delDaemonRequest(state)},
		{Header: netlink.Header{Type: c.family}, Data: emptyRequest(cmdGetDaemon)},
	}, nlconn.BatchOptions{})
	if err == nil {
		err = errs[0]
	}
	if err != nil {
		return newError("stop", obj, err)
	}
	return nil
}

func (c *client) zero(ctx context.Context, k *ServiceKey) error {
	if k == nil {
		_, err := c.exec(ctx, "zero counters", "", 0, emptyRequest(cmdZero))
		return err
	}
	if err := validateKey(*k); err != nil {
		return &Error{Op: "zero counters", Object: k.String(), Err: err}
	}
	_, err := c.exec(ctx, "zero counters", k.String(), 0, serviceRequest(cmdZero, keyService(*k), false))
	return serviceMissing(*k, err)
}

func (c *client) flush(ctx context.Context) error {
	_, err := c.exec(ctx, "flush", "", 0, emptyRequest(cmdFlush))
	return err
}
