package lbd

import (
	"log/slog"
	"time"

	"github.com/vishvananda/netns"

	"github.com/ipvskit/ipvskit/healthcheck"
)

// HealthChecker makes the daemon's Checker on package healthcheck: one
// scheduler and worker pool for every real server, probing from the
// network namespace ns (0: the caller's). log, if not nil, gets its state
// changes and failed checks.
func HealthChecker(ns netns.NsHandle, log *slog.Logger) CheckerMaker {
	return func(notify func(Event), observe func(Key, time.Duration, error)) (Checker, error) {
		c, err := healthcheck.New(&healthcheck.Config[Key]{
			NetNS:   ns,
			Logger:  log,
			Observe: func(r healthcheck.Result[Key]) { observe(r.Key, r.Latency, r.Err) },
			Notify: func(ev healthcheck.Event[Key]) {
				notify(Event{Key: ev.Key, Up: ev.New == healthcheck.Up, Err: ev.Err})
			},
		})
		if err != nil {
			return nil, err
		}
		return healthChecker{c}, nil
	}
}

// healthChecker is a healthcheck.Checker as a Checker.
type healthChecker struct{ c *healthcheck.Checker[Key] }

func (h healthChecker) Replace(targets map[Key]Target) error {
	out := make(map[Key]healthcheck.Target, len(targets))
	for k, t := range targets {
		out[k] = healthcheck.Target{Addr: t.Addr, Check: t.Check.healthcheck()}
	}
	return h.c.Replace(out)
}

func (h healthChecker) Close() error { return h.c.Close() }

// healthcheck is c as package healthcheck's Check.
func (c *Check) healthcheck() healthcheck.Check {
	hc := healthcheck.Check{
		Interval: c.Interval, Timeout: c.Timeout, Jitter: c.Jitter, RetryInterval: c.RetryInterval,
		Rise: c.Rise, Fall: c.Fall,
		HTTP: healthcheck.HTTPCheck{Path: c.Path, Host: c.Host, Status: c.Status, Body: c.Body, InsecureSkipVerify: c.InsecureSkipVerify},
		DNS:  healthcheck.DNSCheck{Name: c.DNSName, Type: c.DNSType, RCode: c.DNSRCode},
	}
	switch c.Type {
	case CheckTCP:
		hc.Type = healthcheck.TCP
	case CheckHTTP:
		hc.Type = healthcheck.HTTP
	case CheckHTTPS:
		hc.Type = healthcheck.HTTPS
	case CheckDNS:
		hc.Type = healthcheck.DNS
	}
	return hc
}
