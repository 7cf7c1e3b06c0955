package main

import (
	"fmt"
	"io"
	"net"
	"sync"
)

// door is the API server's address as clients see it. StartTestServer
// listens on a fresh port each time, so the door listens on a port of its own
// and passes each TCP connection through to the current generation. TLS is
// not terminated here: clients talk TLS to kube-apiserver itself.
//
// The first open picks a free 127.0.0.1 port; later opens listen on the same
// one again. While closed, nothing listens, so connections are refused.
type door struct {
	addr string // host:port, set by the first open

	ln    net.Listener
	wg    sync.WaitGroup // the accept loop and the copy goroutines
	mu    sync.Mutex
	conns map[net.Conn]struct{} // both ends of every passed connection
}

// open listens and passes connections to backend (host:port).
func (d *door) open(backend string) error {
	addr := d.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on front address %s: %w", addr, err)
	}
	d.ln = ln
	d.addr = ln.Addr().String()
	d.conns = make(map[net.Conn]struct{})
	d.wg.Go(func() { d.accept(ln, backend) })
	return nil
}

// close stops listening, closes every passed connection and waits until
// their goroutines are done.
func (d *door) close() {
	if d.ln == nil {
		return
	}
	d.ln.Close()
	d.mu.Lock()
	for c := range d.conns {
		c.Close()
	}
	d.conns = nil
	d.mu.Unlock()
	d.wg.Wait()
	d.ln = nil
}

func (d *door) accept(ln net.Listener, backend string) {
	for {
		client, err := ln.Accept()
		if err != nil {
			return // closed
		}
		server, err := net.Dial("tcp", backend)
		if err != nil {
			client.Close()
			continue
		}
		if !d.track(client, server) {
			return
		}
		d.wg.Go(func() { d.pipe(client, server) })
		d.wg.Go(func() { d.pipe(server, client) })
	}
}

// track records both ends, or closes them and reports false when the door
// closed meanwhile.
func (d *door) track(a, b net.Conn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conns == nil {
		a.Close()
		b.Close()
		return false
	}
	d.conns[a] = struct{}{}
	d.conns[b] = struct{}{}
	return true
}

// pipe copies from src to dst until either fails, then closes both: HTTP
// over TLS has no use for half-closed connections.
func (d *door) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	d.mu.Lock()
	if d.conns != nil {
		delete(d.conns, dst)
		delete(d.conns, src)
	}
	d.mu.Unlock()
}
