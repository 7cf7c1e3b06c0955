package lbd

import (
	"context"
	"net"
	"net/netip"
	"reflect"
	"sync"
	"time"
)

// tcpChecker is the daemon's own checker until package healthcheck
// serves it: every check type is a TCP connect to the target, with the
// check's interval, timeout, rise and fall, one goroutine per target.
type tcpChecker struct {
	dial    func(ctx context.Context, addr netip.AddrPort) (net.Conn, error)
	notify  func(Event)
	observe func(Key, time.Duration, error)

	mu      sync.Mutex
	running map[Key]*probe
	wg      sync.WaitGroup
}

// probe is one target's goroutine.
type probe struct {
	t      Target
	cancel context.CancelFunc
}

// TCPChecker makes the daemon's own Checker, which connects (TCP) to each
// target from the network namespace dial opens sockets in.
func TCPChecker(dial func(ctx context.Context, addr netip.AddrPort) (net.Conn, error)) CheckerMaker {
	return func(notify func(Event), observe func(Key, time.Duration, error)) (Checker, error) {
		return &tcpChecker{dial: dial, notify: notify, observe: observe, running: map[Key]*probe{}}, nil
	}
}

func (c *tcpChecker) Replace(targets map[Key]Target) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, p := range c.running {
		if t, ok := targets[k]; !ok || !reflect.DeepEqual(t, p.t) {
			p.cancel()
			delete(c.running, k)
		}
	}
	for k, t := range targets {
		if c.running[k] != nil {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		c.running[k] = &probe{t: t, cancel: cancel}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.run(ctx, k, t)
		}()
	}
	return nil
}

func (c *tcpChecker) Close() error {
	c.mu.Lock()
	for k, p := range c.running {
		p.cancel()
		delete(c.running, k)
	}
	c.mu.Unlock()
	c.wg.Wait()
	return nil
}

// run checks t every interval until ctx ends, and notifies each change
// once rise successes or fall failures in a row decide it.
func (c *tcpChecker) run(ctx context.Context, k Key, t Target) {
	tick := time.NewTicker(t.Check.Interval)
	defer tick.Stop()
	state, run := 0, 0 // state: 0 unknown, 1 up, -1 down; run: results in a row
	for {
		err := c.once(ctx, k, t)
		if ctx.Err() != nil {
			return
		}
		result := 1
		if err != nil {
			result = -1
		}
		if run*result > 0 {
			run += result
		} else {
			run = result
		}
		if run >= t.Check.Rise && state != 1 || -run >= t.Check.Fall && state != -1 {
			state = result
			c.notify(Event{Key: k, Up: state == 1, Err: err})
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (c *tcpChecker) once(ctx context.Context, k Key, t Target) error {
	ctx, cancel := context.WithTimeout(ctx, t.Check.Timeout)
	defer cancel()
	start := time.Now()
	conn, err := c.dial(ctx, t.Addr)
	if err == nil {
		conn.Close()
	}
	c.observe(k, time.Since(start), err)
	return err
}
