package healthcheck

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/ipvskit/ipvskit/internal/nsfd"
	"golang.org/x/sys/unix"
)

// nsSockets opens sockets inside one network namespace: a goroutine locked
// to an OS thread that entered the namespace creates them, and the workers
// connect and use them from their own threads (a socket keeps the namespace
// it was created in). The thread is never unlocked, so the runtime ends it
// when the goroutine returns.
type nsSockets struct {
	fd     int // our descriptor of the namespace
	req    chan sockReq
	stop   chan struct{}
	exited chan error
}

type sockReq struct {
	domain, typ int
	reply       chan sockResp
}

type sockResp struct {
	fd  int
	err error
}

// openNS starts the socket thread in the namespace nsHandle names (a
// positive descriptor, which is duplicated).
func openNS(nsHandle int) (*nsSockets, error) {
	fd, err := nsfd.Open(nsHandle)
	if err != nil {
		return nil, err
	}
	s := &nsSockets{fd: fd, req: make(chan sockReq), stop: make(chan struct{}), exited: make(chan error, 1)}
	ready := make(chan struct{})
	go func() {
		s.exited <- nsfd.Do(fd, func() error {
			close(ready)
			s.serve()
			return nil
		})
	}()
	select {
	case <-ready:
		return s, nil
	case err := <-s.exited:
		unix.Close(fd)
		return nil, fmt.Errorf("healthcheck: %w", err)
	}
}

func (s *nsSockets) serve() {
	for {
		select {
		case <-s.stop:
			return
		case r := <-s.req:
			fd, err := unix.Socket(r.domain, r.typ|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				err = os.NewSyscallError("socket", err)
			}
			r.reply <- sockResp{fd, err} // buffered
		}
	}
}

func (s *nsSockets) close() {
	close(s.stop)
	<-s.exited
	unix.Close(s.fd)
}

// socket returns a new non-blocking socket made in the namespace.
func (s *nsSockets) socket(ctx context.Context, domain, typ int) (int, error) {
	r := sockReq{domain: domain, typ: typ, reply: make(chan sockResp, 1)}
	select {
	case s.req <- r:
	case <-ctx.Done():
		return -1, ctx.Err()
	case <-s.stop:
		return -1, ErrClosed
	}
	resp := <-r.reply
	return resp.fd, resp.err
}

// dial makes a socket in the namespace and connects it to addr.
func (s *nsSockets) dial(ctx context.Context, network string, addr netip.AddrPort) (net.Conn, error) {
	typ := unix.SOCK_STREAM
	if network == "udp" {
		typ = unix.SOCK_DGRAM
	}
	domain, sa := unix.AF_INET, unix.Sockaddr(&unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().Unmap().As4()})
	if a := addr.Addr(); a.Is6() && !a.Is4In6() {
		domain, sa = unix.AF_INET6, &unix.SockaddrInet6{Port: int(addr.Port()), Addr: a.As16(), ZoneId: zoneID(a.Zone())}
	}
	fd, err := s.socket(ctx, domain, typ)
	if err != nil {
		return nil, opError(network, addr, err)
	}
	conn, err := connect(ctx, fd, sa)
	if err != nil {
		return nil, opError(network, addr, err)
	}
	return conn, nil
}

func opError(network string, addr netip.AddrPort, err error) error {
	return &net.OpError{Op: "dial", Net: network, Addr: net.TCPAddrFromAddrPort(addr), Err: err}
}

func zoneID(zone string) uint32 {
	if zone == "" {
		return 0
	}
	if ifi, err := net.InterfaceByName(zone); err == nil {
		return uint32(ifi.Index)
	}
	return 0
}

// connect connects the non-blocking socket fd (which it owns) to sa, waiting
// through the runtime's poller within ctx, and returns it as a net.Conn.
func connect(ctx context.Context, fd int, sa unix.Sockaddr) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "healthcheck-socket") // registers fd with the poller
	defer f.Close()                                    // net.FileConn keeps a duplicate
	err := unix.Connect(fd, sa)
	if err != nil && err != unix.EINPROGRESS {
		return nil, os.NewSyscallError("connect", err)
	}
	if err == unix.EINPROGRESS {
		if d, ok := ctx.Deadline(); ok {
			f.SetWriteDeadline(d)
		}
		stop := context.AfterFunc(ctx, func() { f.SetWriteDeadline(time.Unix(1, 0)) })
		err = waitConnected(f)
		stop()
		if err != nil {
			return nil, ctxErr(ctx, err)
		}
	}
	return net.FileConn(f)
}

// waitConnected waits until f's connect ends, and returns its error. The
// poller may wake spuriously, so a socket counts as connected only when it
// has a peer (as the net package checks).
func waitConnected(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var cerr error
	err = rc.Write(func(fd uintptr) bool {
		soerr, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR)
		if err != nil {
			cerr = os.NewSyscallError("getsockopt", err)
			return true
		}
		switch e := unix.Errno(soerr); e {
		case unix.EINPROGRESS, unix.EALREADY, unix.EINTR:
			return false
		case 0, unix.EISCONN:
			_, err := unix.Getpeername(int(fd))
			return err == nil
		default:
			cerr = os.NewSyscallError("connect", e)
			return true
		}
	})
	if err != nil {
		return err
	}
	return cerr
}
