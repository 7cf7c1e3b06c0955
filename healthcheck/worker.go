package healthcheck

import (
	"context"
	"fmt"
	"net/netip"
	"time"
)

// work runs due checks until the Checker closes.
func (c *Checker[K]) work() {
	for {
		select {
		case e := <-c.sched.work:
			c.check(e)
		case <-c.ctx.Done():
			return
		}
	}
}

// check runs e's check, records the result and delivers the event, if any.
func (c *Checker[K]) check(e *entry[K]) {
	s := &c.sched
	s.mu.Lock()
	if e.removed {
		s.mu.Unlock()
		return
	}
	p, addr, due := e.p, e.addr, e.due
	s.mu.Unlock()

	start := time.Now()
	c.late.Add(int64(start.Sub(due)))
	ctx, cancel := context.WithTimeout(c.ctx, p.timeout)
	err := c.core.run(ctx, p, addr)
	cancel()
	end := time.Now()
	c.checks.Add(1)
	if c.ctx.Err() != nil {
		return // closing: not a result
	}

	e.deliver.Lock()
	defer e.deliver.Unlock()
	s.mu.Lock()
	if e.removed {
		s.mu.Unlock()
		return
	}
	old, changed := e.cnt.record(err == nil, e.p.Rise, e.p.Fall)
	now := e.cnt.state
	if !changed {
		s.reschedule(e, start, end, err == nil)
	}
	s.mu.Unlock()
	if c.observe != nil {
		c.observe(Result[K]{Key: e.key, Addr: addr, State: now, Err: err, Time: end, Latency: end.Sub(start)})
	}

	if err != nil && c.log != nil {
		c.log.Debug("health check failed", "target", e.key, "addr", addr, "check", p.Type, "err", err)
	}
	if !changed {
		return
	}
	ev := Event[K]{Key: e.key, Addr: addr, Old: old, New: e.cnt.state, Err: err, Time: end, Latency: end.Sub(start)}
	if c.log != nil {
		c.log.Info("health check state changed", "target", e.key, "addr", addr, "check", p.Type,
			"old", old, "new", ev.New, "err", err)
	}
	if c.notify != nil {
		c.notify(ev)
	}
	// The next check starts only after the event is delivered. e cannot
	// have been removed meanwhile (that takes e.deliver, which we hold).
	s.mu.Lock()
	s.reschedule(e, start, end, err == nil)
	s.mu.Unlock()
}

// run runs one check of p against addr within ctx.
func (c *checkerCore) run(ctx context.Context, p *probe, addr netip.AddrPort) error {
	var err error
	switch p.Type {
	case TCP:
		err = c.checkTCP(ctx, addr)
	case HTTP, HTTPS:
		err = c.checkHTTP(ctx, p, addr)
	case DNS:
		err = c.checkDNS(ctx, p, addr)
	case Func:
		err = callFunc(ctx, p.Func)
	}
	if err != nil {
		return fmt.Errorf("healthcheck: %s %s: %w", p.Type, addr, err)
	}
	return nil
}

// callFunc calls a Func check. A panic in it is the check's failure, not the
// end of the worker (and of the program).
func callFunc(ctx context.Context, f func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("func check panicked: %v", r)
		}
	}()
	if err = f(ctx); err != nil && ctx.Err() != nil {
		err = ctxErr(ctx, err)
	}
	return err
}
