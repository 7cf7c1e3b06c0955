package healthcheck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"golang.org/x/sys/unix"
)

// Servers inside a fresh namespace, reachable only there: checks with
// Config.NetNS reach them, checks without it (from the caller's namespace)
// do not.
func TestIntegrationNetNS(t *testing.T) {
	ns := testutil.NewNetNS(t)
	var tcpL, httpL net.Listener
	var dnsC *net.UDPConn
	ns.Do(t, func() {
		tcpL = tcpServer(t)
		dnsC = dnsServer(t, byName)
		var err error
		if httpL, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })}
	go srv.Serve(httpL)
	t.Cleanup(func() { srv.Close() })

	httpCheck := check(HTTP, time.Second)
	httpCheck.HTTP.Body = "ok"
	dnsCheck := check(DNS, time.Second)
	dnsCheck.DNS.Name = "example.com"
	targets := map[string]Target{
		"tcp":  {Addr: addrOf(t, tcpL.Addr()), Check: check(TCP, time.Second)},
		"http": {Addr: addrOf(t, httpL.Addr()), Check: httpCheck},
		"dns":  {Addr: addrOf(t, dnsC.LocalAddr()), Check: dnsCheck},
	}
	for _, tc := range []struct {
		name string
		cfg  Config[string]
		want State
	}{
		{"in the namespace", Config[string]{NetNS: ns.Handle()}, Up},
		{"from the caller's", Config[string]{}, Down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, events := start(t, tc.cfg)
			if err := c.Replace(targets); err != nil {
				t.Fatal(err)
			}
			for range targets {
				if ev := next(t, events); ev.New != tc.want {
					t.Errorf("%v, want %v", ev, tc.want)
				}
			}
		})
	}
}

// Timeouts through the namespace's dialer: a server that accepts and never
// answers, and one whose full accept queue drops SYNs, so that the connect
// itself never completes.
func TestIntegrationNetNSTimeout(t *testing.T) {
	ns := testutil.NewNetNS(t)
	var silent net.Listener
	var full netip.AddrPort
	ns.Do(t, func() {
		silent = silentServer(t)
		full = fullListener(t)
	})
	for _, tc := range []struct {
		name string
		typ  Type
		addr netip.AddrPort
	}{
		{"response", HTTP, addrOf(t, silent.Addr())},
		{"connect", TCP, full},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, events := start(t, Config[netip.AddrPort]{NetNS: ns.Handle()})
			ck := check(tc.typ, time.Second)
			ck.Timeout = 100 * time.Millisecond
			if err := c.Set(tc.addr, Target{Addr: tc.addr, Check: ck}); err != nil {
				t.Fatal(err)
			}
			ev := expect(t, events, tc.addr, Unknown, Down)
			if !errors.Is(ev.Err, context.DeadlineExceeded) {
				t.Errorf("error %v: want context.DeadlineExceeded", ev.Err)
			}
		})
	}
}

// fullListener returns the address of a listener (in the calling thread's
// namespace) with a backlog of 0 that nobody accepts from, filled until a
// connect to it hangs.
func fullListener(t *testing.T) netip.AddrPort {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(sa.(*unix.SockaddrInet4).Port))
	for i := 0; ; i++ {
		if i == 16 {
			t.Fatalf("%d connects to a listener with backlog 0 all completed", i)
		}
		conn, err := net.DialTimeout("tcp", addr.String(), 100*time.Millisecond)
		if err != nil {
			return addr // the queue is full: SYNs are dropped
		}
		t.Cleanup(func() { conn.Close() })
	}
}

// Checker.DialContext, for Func checks, dials from the Checker's namespace.
func TestIntegrationNetNSDial(t *testing.T) {
	ns := testutil.NewNetNS(t)
	var l net.Listener
	ns.Do(t, func() { l = tcpServer(t) })
	addr := addrOf(t, l.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), eventWait)
	defer cancel()
	in, _ := start(t, Config[string]{NetNS: ns.Handle()})
	conn, err := in.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("DialContext from the namespace: %v", err)
	}
	conn.Close()
	out, _ := start(t, Config[string]{})
	if conn, err := out.DialContext(ctx, "tcp", addr); err == nil {
		conn.Close()
		t.Errorf("DialContext from the caller's namespace reached %v, which listens only in the test's", addr)
	}
	if _, err := in.DialContext(ctx, "ip", addr); err == nil {
		t.Errorf("DialContext(ip) accepted")
	}
}
