package netnstest

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// ServeTCP starts a TCP server inside ns on addr, which answers every
// connection with reply and closes it, until the test ends.
func (ns *NS) ServeTCP(tb testing.TB, addr netip.AddrPort, reply string) *Server {
	tb.Helper()
	var ln *net.TCPListener
	var err error
	ns.Do(tb, func() { ln, err = net.ListenTCP("tcp", net.TCPAddrFromAddrPort(addr)) })
	if err != nil {
		tb.Fatalf("netnstest: listening on tcp %v: %v", addr, err)
	}
	s := &Server{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.AcceptTCP()
			if err != nil {
				return // closed at the test's end
			}
			s.saw(c.RemoteAddr().(*net.TCPAddr).AddrPort())
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, reply)
			c.Close()
		}
	}()
	tb.Cleanup(func() { ln.Close(); wg.Wait() })
	return s
}

// ServeUDP starts a UDP server inside ns on addr, which answers every
// datagram with reply, until the test ends.
func (ns *NS) ServeUDP(tb testing.TB, addr netip.AddrPort, reply string) *Server {
	tb.Helper()
	var c *net.UDPConn
	var err error
	ns.Do(tb, func() { c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr)) })
	if err != nil {
		tb.Fatalf("netnstest: listening on udp %v: %v", addr, err)
	}
	s := &Server{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			_, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return // closed at the test's end
			}
			s.saw(from)
			c.WriteToUDPAddrPort([]byte(reply), from)
		}
	}()
	tb.Cleanup(func() { c.Close(); wg.Wait() })
	return s
}

// DialTCP connects from inside ns to addr and returns what the server
// sends before it closes the connection (a Server's reply). It returns
// the failure, rather than failing tb, for tests that expect one; ctx
// bounds it (a deadline is wise: a dropped packet is retried for minutes).
func (ns *NS) DialTCP(ctx context.Context, tb testing.TB, addr netip.AddrPort) (string, error) {
	tb.Helper()
	var c net.Conn
	var err error
	ns.Do(tb, func() { c, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr.String()) })
	if err != nil {
		return "", err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	b, err := io.ReadAll(c)
	if err != nil {
		return string(b), errors.Join(err, ctx.Err())
	}
	return string(b), nil
}

// DialUDP sends one datagram from inside ns to addr and returns the first
// answer (a Server's reply), or the failure; ctx bounds the wait, and the
// datagram is sent again every 200 ms until then (UDP may lose it).
func (ns *NS) DialUDP(ctx context.Context, tb testing.TB, addr netip.AddrPort) (string, error) {
	tb.Helper()
	var c *net.UDPConn
	var err error
	ns.Do(tb, func() { c, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(addr)) })
	if err != nil {
		return "", err
	}
	defer c.Close()
	buf := make([]byte, 2048)
	for {
		if _, err := c.Write([]byte("?")); err != nil {
			return "", err
		}
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, err := c.Read(buf)
		if err == nil {
			return string(buf[:n]), nil
		}
		if ctx.Err() != nil {
			return "", errors.Join(err, ctx.Err())
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return "", err
		}
	}
}

func (s *Server) saw(p netip.AddrPort) {
	s.mu.Lock()
	s.peers = append(s.peers, netip.AddrPortFrom(p.Addr().Unmap(), p.Port()))
	s.mu.Unlock()
}
