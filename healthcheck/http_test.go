package healthcheck

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestHTTPMatches(t *testing.T) {
	var host atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host.Store(r.Host)
		switch r.URL.Path {
		case "/ok":
			fmt.Fprint(w, "status: healthy, load 0.3")
		case "/created":
			w.WriteHeader(http.StatusCreated)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	addr := addrOf(t, srv.Listener.Addr())
	for _, tc := range []struct {
		name string
		h    HTTPCheck
		want State
	}{
		{"status", HTTPCheck{Path: "/ok"}, Up},
		{"query", HTTPCheck{Path: "/ok?full=1"}, Up},
		{"not found", HTTPCheck{Path: "/nope"}, Down},
		{"listed status", HTTPCheck{Path: "/created", Status: []int{200, 201}}, Up},
		{"unlisted status", HTTPCheck{Path: "/created"}, Down},
		{"body", HTTPCheck{Path: "/ok", Body: "healthy"}, Up},
		{"body missing", HTTPCheck{Path: "/ok", Body: "sick"}, Down},
		{"regexp", HTTPCheck{Path: "/ok", BodyRegexp: `load 0\.[0-4]`}, Up},
		{"regexp fails", HTTPCheck{Path: "/ok", BodyRegexp: `load [1-9]`}, Down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ck := check(HTTP, time.Second)
			ck.HTTP = tc.h
			ev := first(t, addr, ck, tc.want)
			if tc.want == Down && !errors.Is(ev.Err, ErrMismatch) {
				t.Errorf("error %v: want ErrMismatch", ev.Err)
			}
		})
	}
	if got := host.Load(); got != addr.String() {
		t.Errorf("default Host header %q, want the address %q", got, addr)
	}
}

func TestHTTPHostHeader(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "web.example" {
			http.Error(w, "wrong host "+r.Host, http.StatusMisdirectedRequest)
		}
	}))
	defer srv.Close()
	ck := check(HTTP, time.Second)
	ck.HTTP.Host = "web.example"
	first(t, addrOf(t, srv.Listener.Addr()), ck, Up)
}

func TestHTTPS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the test
	srv.StartTLS()
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	addr := addrOf(t, srv.Listener.Addr())
	for _, tc := range []struct {
		name string
		h    HTTPCheck
		want State
	}{
		{"unverified", HTTPCheck{InsecureSkipVerify: true}, Up},
		// An empty pool, not the system's: loading those can take longer
		// than a test waits in an emulated VM.
		{"unknown authority", HTTPCheck{RootCAs: x509.NewCertPool()}, Down},
		{"verified by address", HTTPCheck{RootCAs: roots}, Up},
		{"verified by host", HTTPCheck{RootCAs: roots, Host: "example.com"}, Up},
		{"wrong host", HTTPCheck{RootCAs: roots, Host: "web.example"}, Down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ck := check(HTTPS, time.Second)
			ck.HTTP = tc.h
			ev := first(t, addr, ck, tc.want)
			if tc.want == Down && errors.Is(ev.Err, ErrMismatch) {
				t.Errorf("error %v: want a TLS error, not a mismatch", ev.Err)
			}
		})
	}
}

func TestHTTPNeverAnswers(t *testing.T) {
	l := silentServer(t)
	ck := check(HTTP, time.Second)
	ck.Timeout = 50 * time.Millisecond
	ev := first(t, addrOf(t, l.Addr()), ck, Down)
	if !errors.Is(ev.Err, context.DeadlineExceeded) {
		t.Errorf("error %v: want context.DeadlineExceeded", ev.Err)
	}
	if ev.Latency < ck.Timeout {
		t.Errorf("latency %v: shorter than the timeout %v", ev.Latency, ck.Timeout)
	}
}

// A server that fails, then recovers: Rise and Fall consecutive results
// decide, and every change is one event.
func TestHTTPFlaps(t *testing.T) {
	var healthy atomic.Bool
	healthy.Store(true)
	var requests, failures atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if !healthy.Load() {
			failures.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	c, events := start(t, Config[string]{})
	ck := check(HTTP, 250*time.Millisecond) // long enough for an emulated VM's loopback
	ck.Timeout = 0                          // = Interval
	ck.Rise, ck.Fall = 2, 3
	if err := c.Set("web", Target{Addr: addrOf(t, srv.Listener.Addr()), Check: ck}); err != nil {
		t.Fatal(err)
	}
	expect(t, events, "web", Unknown, Up)
	if n := requests.Load(); n < 2 {
		t.Errorf("up after %d requests, want Rise = 2", n)
	}
	healthy.Store(false)
	ev := expect(t, events, "web", Up, Down)
	if n := failures.Load(); n < 3 {
		t.Errorf("down after %d failed requests, want Fall = 3", n)
	}
	if !errors.Is(ev.Err, ErrMismatch) {
		t.Errorf("error %v: want ErrMismatch", ev.Err)
	}
	healthy.Store(true)
	ev = expect(t, events, "web", Down, Up)
	if ev.Err != nil {
		t.Errorf("up event with error %v", ev.Err)
	}
}
