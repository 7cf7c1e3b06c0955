package nlconn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/ipvskit/ipvskit/internal/nsfd"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Conn is a netlink socket of one protocol family in one network namespace.
// It is safe for concurrent use; calls run one at a time.
type Conn struct {
	family  int
	bufSize int

	mu     sync.Mutex
	nsfd   int // our own duplicate of the namespace; -1 once closed
	s      *sock
	seq    uint32
	spare  []*sock // DumpEach's sockets, kept between calls
	closed bool
}

// sock is one dialled socket. A Conn replaces it after a call that a context
// cut short.
type sock struct {
	nc     *netlink.Conn
	raw    syscall.RawConn
	pid    uint32
	rcvbuf int // as the kernel reports it (already doubled)
	sndbuf int
	buf    []byte // reusable receive buffer
	out    []byte // reusable send buffer
	seq    uint32 // the last sequence number used, for DumpEach's sockets
}

// Dial opens a netlink socket of the given protocol family (for example
// unix.NETLINK_GENERIC or unix.NETLINK_NETFILTER) with NETLINK_CAP_ACK and
// extended acks on and large socket buffers. A nil cfg means defaults.
func Dial(family int, cfg *Config) (*Conn, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	fd, err := nsfd.Open(cfg.NetNS)
	if err != nil {
		return nil, fmt.Errorf("netlink dial: %w", err)
	}
	c := &Conn{family: family, bufSize: cfg.BufferSize, nsfd: fd}
	if c.bufSize <= 0 {
		c.bufSize = DefaultBufferSize
	}
	s, err := c.dial()
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	c.s = s
	return c, nil
}

func (c *Conn) dial() (*sock, error) {
	nc, err := netlink.Dial(c.family, &netlink.Config{NetNS: c.nsfd})
	if err != nil {
		return nil, fmt.Errorf("netlink dial (family %d): %w", c.family, err)
	}
	s := &sock{nc: nc, pid: nc.PID(), buf: make([]byte, recvBufLen)}
	fail := func(what string, err error) (*sock, error) {
		nc.Close()
		return nil, fmt.Errorf("netlink dial (family %d): %s: %w", c.family, what, err)
	}
	if err := nc.SetOption(netlink.CapAcknowledge, true); err != nil {
		return fail("NETLINK_CAP_ACK", err)
	}
	if err := nc.SetOption(netlink.ExtendedAcknowledge, true); err != nil {
		return fail("NETLINK_EXT_ACK", err)
	}
	if s.raw, err = nc.SyscallConn(); err != nil {
		return fail("raw socket", err)
	}
	if s.rcvbuf, err = setBuffer(s.raw, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, c.bufSize); err != nil {
		return fail("receive buffer", err)
	}
	if s.sndbuf, err = setBuffer(s.raw, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, c.bufSize); err != nil {
		return fail("send buffer", err)
	}
	return s, nil
}

// setBuffer asks for size with the forcing option (needs CAP_NET_ADMIN), falls
// back to the plain one, and returns what the kernel granted.
func setBuffer(raw syscall.RawConn, force, plain, size int) (int, error) {
	var got int
	var err error
	cerr := raw.Control(func(fd uintptr) {
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, force, size) != nil {
			if err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, plain, size); err != nil {
				return
			}
		}
		got, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, plain)
	})
	if cerr != nil {
		return 0, cerr
	}
	return got, err
}

// Close closes the socket. Calls after Close return ErrClosed.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var err error
	if c.s != nil {
		err = c.s.nc.Close()
		c.s = nil
	}
	for _, s := range c.spare {
		s.nc.Close()
	}
	c.spare = nil
	unix.Close(c.nsfd)
	c.nsfd = -1
	return err
}

// Buffers reports the socket's receive and send buffer sizes as the kernel
// granted them.
func (c *Conn) Buffers() (rcv, snd int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ensure(); err != nil {
		return 0, 0, err
	}
	return c.s.rcvbuf, c.s.sndbuf, nil
}

// ensure makes sure c.s is a usable socket. c.mu is held.
func (c *Conn) ensure() error {
	if c.closed {
		return ErrClosed
	}
	if c.s == nil {
		s, err := c.dial()
		if err != nil {
			return err
		}
		c.s = s
	}
	return nil
}

// do runs f on the socket with ctx bounding it: ctx's deadline becomes the
// socket deadline and ctx's cancellation sets a deadline in the past. When ctx
// cut f short, the socket is replaced, since replies may still be queued on it.
func (c *Conn) do(ctx context.Context, op string, f func(s *sock) error) error {
	if err := ctx.Err(); err != nil {
		return &ctxError{op, err}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ensure(); err != nil {
		return err
	}
	s := c.s
	dl, _ := ctx.Deadline()
	if err := s.nc.SetDeadline(dl); err != nil {
		return fmt.Errorf("netlink %s: setting deadline: %w", op, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = s.nc.SetDeadline(time.Unix(1, 0)) })
	err := f(s)
	if !stop() || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, unix.ENOBUFS) {
		// ctx fired (possibly while f was blocked), or replies were lost:
		// this socket's state is unknown. Replace it; if the new dial
		// fails, the next call dials again.
		s.nc.Close()
		c.s = nil
		if ns, derr := c.dial(); derr == nil {
			c.s = ns
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			cerr := ctx.Err()
			if cerr == nil {
				cerr = context.DeadlineExceeded
			}
			return &ctxError{op, cerr}
		}
	}
	return err
}

// Execute sends one request and returns its replies. With netlink.Dump in
// m.Header.Flags it reads a dump to its end and returns every message of it;
// otherwise it asks for an ack and returns the replies that came before it.
// m.Header's Length, Sequence and PID are filled in. A kernel error is an
// *Error; a call cut short by ctx wraps ctx.Err().
func (c *Conn) Execute(ctx context.Context, m netlink.Message) ([]netlink.Message, error) {
	var replies []netlink.Message
	if m.Header.Flags&netlink.Dump == netlink.Dump {
		err := c.Dump(ctx, m, func(h netlink.Header, data []byte) error {
			replies = append(replies, netlink.Message{Header: h, Data: append([]byte(nil), data...)})
			return nil
		})
		if err != nil {
			return nil, err
		}
		return replies, nil
	}
	err := c.do(ctx, "execute", func(s *sock) error {
		c.seq++
		seq := c.seq
		s.out = appendMessage(s.out[:0], m.Header.Type, m.Header.Flags|netlink.Request|netlink.Acknowledge, seq, s.pid, m.Data)
		if err := s.send(s.out); err != nil {
			return err
		}
		for {
			b, err := s.recv()
			if err != nil {
				return err
			}
			for len(b) > 0 {
				h, data, rest, err := nextMessage(b)
				if err != nil {
					return fmt.Errorf("netlink receive: %w", err)
				}
				b = rest
				if h.Sequence != seq {
					continue // not ours (cannot happen on a fresh socket)
				}
				switch {
				case h.Type == nlmsgError:
					kerr, err := parseError(h, data)
					if err != nil {
						return fmt.Errorf("netlink receive: %w", err)
					}
					if kerr != nil {
						return kerr
					}
					return nil // the ack
				default:
					replies = append(replies, netlink.Message{Header: h, Data: append([]byte(nil), data...)})
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return replies, nil
}

// send writes b with one sendmsg.
func (s *sock) send(b []byte) error {
	var serr error
	err := s.raw.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), b, unix.MSG_DONTWAIT, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		return serr != unix.EAGAIN
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("netlink send: %w", err)
	}
	return nil
}

// recv reads one datagram into s.buf and returns it (valid until the next
// recv). ENOBUFS means the kernel dropped replies.
func (s *sock) recv() ([]byte, error) {
	var (
		n, flags int
		rerr     error
	)
	err := s.raw.Read(func(fd uintptr) bool {
		n, _, flags, _, rerr = unix.Recvmsg(int(fd), s.buf, nil, unix.MSG_DONTWAIT)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if errors.Is(err, unix.ENOBUFS) {
		return nil, fmt.Errorf("netlink receive: %w: %w", ErrRepliesLost, err)
	}
	if err != nil {
		return nil, fmt.Errorf("netlink receive: %w", err)
	}
	if flags&unix.MSG_TRUNC != 0 {
		return nil, fmt.Errorf("netlink receive: message larger than %d bytes truncated", len(s.buf))
	}
	return s.buf[:n], nil
}
