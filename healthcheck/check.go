package healthcheck

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/netip"
	"time"
)

// Type is the kind of a Check.
type Type int

// The check types. The zero Type is no type: Set refuses it.
const (
	TCP   Type = iota + 1 // connect, then close
	HTTP                  // one HTTP/1.1 GET over TCP
	HTTPS                 // one HTTP/1.1 GET over TLS
	DNS                   // one DNS query over UDP
	Func                  // the caller's function (Check.Func)
)

// String returns the type's name: tcp, http, https, dns or func.
func (t Type) String() string {
	switch t {
	case TCP:
		return "tcp"
	case HTTP:
		return "http"
	case HTTPS:
		return "https"
	case DNS:
		return "dns"
	case Func:
		return "func"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// Check says how and how often a target is probed. Type, Interval, Rise and
// Fall are required; the other fields document their zero values.
type Check struct {
	// Type is the kind of probe; the zero Type is refused.
	Type Type
	// Interval is the time between the starts of two checks; more than 0.
	Interval time.Duration
	// Timeout bounds one check; 0 means Interval. At most Interval.
	Timeout time.Duration
	// Jitter varies each wait by a random amount in [-Jitter, +Jitter];
	// from 0 (none) to less than Interval.
	Jitter time.Duration
	// RetryInterval replaces Interval after a failure while the target is
	// not Down (keepalived's delay_before_retry); 0 means Interval.
	RetryInterval time.Duration
	// Rise is how many consecutive successes make a target Up; at least 1.
	Rise int
	// Fall is how many consecutive failures make a target Down; at least 1.
	Fall int

	// HTTP configures HTTP and HTTPS checks; other types ignore it.
	HTTP HTTPCheck
	// DNS configures DNS checks; other types ignore it.
	DNS DNSCheck
	// Func is called by Func checks with a context that carries the
	// timeout; nil is refused for them. Its error, if any, is the check's
	// cause (wrapped); a panic is a failure too. It must return when ctx
	// ends: until it does, it holds one of the workers. It runs in the
	// caller's network namespace.
	Func func(ctx context.Context) error
}

// HTTPCheck configures an HTTP or HTTPS check: GET Path with Host, expect
// one of Status and, if set, a body that matches.
type HTTPCheck struct {
	// Path is the request target, an absolute path with an optional
	// query ("/healthz?full=1"); "" means "/".
	Path string
	// Host is the Host header (and the TLS server name); "" means the
	// target's address.
	Host string
	// Status lists the statuses that pass; nil means 200 only.
	Status []int
	// Body, if not "", must occur in the response body.
	Body string
	// BodyRegexp, if not "", must match the response body (Go's regexp
	// syntax).
	BodyRegexp string
	// InsecureSkipVerify makes HTTPS accept any certificate. Without it
	// the server's certificate must be valid for Host (or the address).
	InsecureSkipVerify bool
	// RootCAs verifies HTTPS certificates; nil means the system's roots.
	RootCAs *x509.CertPool
}

// DNSCheck configures a DNS check: a query for Name and Type (class IN)
// whose answer must carry RCode.
type DNSCheck struct {
	// Name is the name queried: labels of letters, digits, '-' and '_',
	// each at most 63 bytes, at most 253 bytes in all, with or without
	// the final dot; "." is the root.
	Name string
	// Type is the query type's mnemonic: A, NS, CNAME, SOA, PTR, MX, TXT,
	// AAAA, SRV or ANY; "" means A.
	Type string
	// RCode is the response code that passes (0 NOERROR, 3 NXDOMAIN, ...);
	// 0 to 15.
	RCode int
}

// Target is what one key of a Checker probes.
type Target struct {
	// Addr is where the probe connects (for Func checks, only reported).
	Addr  netip.AddrPort
	Check Check
}
