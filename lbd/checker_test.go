package lbd

import (
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/healthcheck"
)

// TestHealthChecker: the daemon's checks run by package healthcheck: a
// listener that closes makes its real server down after fall failures,
// and every check's latency is observed, those that change nothing too.
func TestHealthChecker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	addr := netip.MustParseAddrPort(ln.Addr().String())
	events := make(chan Event, 10)
	var failures atomic.Int64 // failed checks observed
	c, err := HealthChecker(0, nil)(func(ev Event) { events <- ev }, func(_ Key, d time.Duration, err error) {
		if err != nil && d > 0 {
			failures.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	k := Key{"web", addr}
	ck := &Check{Type: CheckTCP, Interval: 50 * time.Millisecond, Rise: 1, Fall: 2}
	ck.defaults()
	if err := c.Replace(map[Key]Target{k: {Addr: addr, Check: *ck}}); err != nil {
		t.Fatal(err)
	}
	want := func(up bool) {
		t.Helper()
		select {
		case ev := <-events:
			if ev.Key != k || ev.Up != up {
				t.Fatalf("event %+v, want up=%v", ev, up)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event up=%v", up)
		}
	}
	want(true)
	ln.Close()
	want(false)
	// Fall 2: the first failure changed nothing and was observed too (the
	// second is observed before its event is delivered).
	if n := failures.Load(); n < 2 {
		t.Errorf("%d failed checks observed before down, want 2", n)
	}
}

func TestCheckMapsOntoHealthcheck(t *testing.T) {
	c := &Check{Type: CheckHTTPS, Interval: 2 * time.Second, Rise: 2, Fall: 3, Path: "/healthz", Host: "web.example",
		Status: []int{200, 204}, Body: "ok", InsecureSkipVerify: true}
	c.defaults()
	hc := c.healthcheck()
	if hc.Type != healthcheck.HTTPS || hc.Timeout != 2*time.Second || hc.HTTP.Path != "/healthz" || hc.HTTP.Host != "web.example" ||
		len(hc.HTTP.Status) != 2 || hc.HTTP.Body != "ok" || !hc.HTTP.InsecureSkipVerify || hc.Rise != 2 || hc.Fall != 3 {
		t.Errorf("healthcheck.Check = %+v", hc)
	}
	d := (&Check{Type: CheckDNS, DNSName: "example.org", DNSType: "AAAA", DNSRCode: 3}).healthcheck()
	if d.Type != healthcheck.DNS || d.DNS.Name != "example.org" || d.DNS.Type != "AAAA" || d.DNS.RCode != 3 {
		t.Errorf("healthcheck.Check = %+v", d)
	}
}
