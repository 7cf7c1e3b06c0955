// Package healthcheck probes a load balancer's real servers and reports when
// each one goes up or down.
//
// A Checker holds a set of targets, each a caller-chosen key (any comparable
// type: a netip.AddrPort, a string ID, a struct naming service and endpoint)
// with an address and a Check. One scheduler and a fixed pool of workers run
// every target's checks, whatever their number: 10,000 targets checked every
// 2 s use Config.Workers goroutines, not 10,000.
//
//	c, err := healthcheck.New(&healthcheck.Config[string]{
//		Notify: func(ev healthcheck.Event[string]) { events <- ev },
//	})
//	...
//	defer c.Close()
//	err = c.Set("web-1", healthcheck.Target{
//		Addr: netip.MustParseAddrPort("198.18.0.10:80"),
//		Check: healthcheck.Check{
//			Type:     healthcheck.HTTP,
//			Interval: 2 * time.Second, Timeout: time.Second,
//			Rise: 2, Fall: 3,
//			HTTP: healthcheck.HTTPCheck{Path: "/healthz", Host: "web.example"},
//		},
//	})
//
// # Checks
//
// TCP connects and closes. HTTP and HTTPS send one GET and compare the
// status (and optionally the body, by substring or regular expression); HTTPS
// verifies the server's certificate unless HTTPCheck.InsecureSkipVerify says
// not to. DNS sends one query over UDP and compares the answer's RCODE (the
// message is encoded here, with the standard library). Func calls the
// caller's function. Every probe opens a new connection (no keep-alive), so a
// server that accepts no new connections fails its check.
//
// # States and events
//
// A target starts Unknown. Rise consecutive successes make it Up, Fall
// consecutive failures make it Down; one result never flips it unless Rise
// or Fall is 1. Each change of state is one Event, delivered to
// Config.Notify with the target's key, the old and new state, the last
// check's error (nil for a success) and the time. Events of one target come
// in order; after Remove (or a Replace without the key) returns, the target
// gets no more events. Set with a new address or check type starts the target
// over at Unknown, without an event; other changes (timing, path, ...) keep
// its state and schedule.
//
// # Timing
//
// Each target's checks start Interval apart, each varied by a random amount
// up to Jitter either way; the first check of a new target starts after a
// random delay up to Jitter, so that a large set added at once is spread
// out (with Jitter near Interval, over the whole interval). A check that takes longer than Timeout fails. After a
// failure, while the target is not yet Down, the next check comes
// RetryInterval later instead (0: Interval).
//
// keepalived's and seesaw's words map onto these fields:
//
//	keepalived                 here
//	delay_loop S               Check.Interval
//	connect_timeout S          Check.Timeout
//	retry N                    Check.Fall = N+1 (failed attempts before down)
//	delay_before_retry S       Check.RetryInterval
//	rise N / fall N (MISC)     Check.Rise / Check.Fall
//	alpha                      treat Unknown as Down (the caller's choice)
//	TCP_CHECK                  TCP
//	HTTP_GET / SSL_GET         HTTP / HTTPS (url path, status_code; digest: use BodyRegexp)
//	virtualhost NAME           HTTPCheck.Host
//	DNS_CHECK type, name       DNS (DNSCheck.Type, DNSCheck.Name)
//	MISC_CHECK                 Func
//
//	seesaw (healthcheck)       here
//	Interval, Timeout          Check.Interval, Check.Timeout
//	Retries N                  Check.Fall = N+1
//	TCP, HTTP(S), DNS checkers TCP, HTTP, HTTPS, DNS
//	ResponseCode, Response     HTTPCheck.Status, HTTPCheck.Body
//	TLSVerify false            HTTPCheck.InsecureSkipVerify
//
// # Network namespace
//
// Config.NetNS chooses the namespace the probes' sockets are opened in (0:
// the caller's). A node agent running in its own namespace probes from the
// node's this way. The sockets are opened on one OS thread that stays inside
// that namespace and then used from the workers, so the rest of the program
// never runs there. Func checks run in the caller's namespace; they can dial
// from the chosen one with Checker.DialContext.
//
// # Errors
//
// Bad input (an unknown check type, an interval that is not positive, a
// Timeout longer than Interval, Rise or Fall below 1, a path that is not a
// URL, a DNS name that is not a name) is refused by New, Set and Replace
// with a *ValidationError, an inet.InputError naming each field and value;
// nothing changes. A failed check's error wraps its cause with %w: a
// context.DeadlineExceeded for a timeout, a *net.OpError from the socket,
// ErrMismatch for a reply that is not the one expected.
//
// Nothing is logged unless Config.Logger is set; there is no global state.
package healthcheck
