package agent

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// runner calls fn with kube-proxy's rate limits: when triggered, at once if
// the last call started at least min ago, else as soon as it did; and at
// least every period without a trigger. A failed call is retried after
// retry, doubling up to period, until one succeeds. Triggers during a call
// make one more call afterwards, not one each.
type runner struct {
	clock       clock.Clock
	min, period time.Duration
	retry       time.Duration // first retry after a failure
	fn          func(context.Context) error
	kick        chan struct{}
	armed       func(time.Duration) // tests: called each time the timer is set
}

func newRunner(c clock.Clock, minPeriod, period time.Duration, fn func(context.Context) error) *runner {
	return &runner{clock: c, min: minPeriod, period: period, retry: min(time.Second, period), fn: fn,
		kick: make(chan struct{}, 1)}
}

// Trigger asks for a call; it never blocks.
func (r *runner) Trigger() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Run calls fn until ctx ends. The first call waits for the first Trigger.
func (r *runner) Run(ctx context.Context) {
	var (
		last    time.Time // start of the last call; zero before the first
		pending bool
		backoff time.Duration
		timer   clock.Timer
		fire    <-chan time.Time
	)
	arm := func(d time.Duration) {
		if timer != nil {
			timer.Stop()
		}
		timer = r.clock.NewTimer(d)
		fire = timer.C()
		if r.armed != nil {
			r.armed(d)
		}
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
			pending = true
		case <-fire:
			// The periodic call, a retry, or a trigger that had to wait.
			if !last.IsZero() {
				pending = true
			}
		}
		if !pending {
			continue
		}
		if !last.IsZero() {
			if wait := last.Add(r.min).Sub(r.clock.Now()); wait > 0 {
				arm(wait)
				continue
			}
		}
		pending = false
		last = r.clock.Now()
		if err := r.fn(ctx); err != nil && ctx.Err() == nil {
			backoff = min(max(backoff*2, r.retry), r.period)
			arm(backoff)
			continue
		}
		backoff = 0
		arm(r.period)
	}
}
