package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// runnerRig runs a runner on a fake clock; calls and armed report what it
// does, so that the test waits for events, never for time.
type runnerRig struct {
	clock  *clocktesting.FakeClock
	r      *runner
	calls  chan time.Time     // the fake time of each call
	armed  chan time.Duration // each timer set
	result chan error         // what the next call returns
}

func newRunnerRig(t *testing.T, minPeriod, period time.Duration) *runnerRig {
	g := &runnerRig{
		clock:  clocktesting.NewFakeClock(time.Unix(1_000_000, 0)),
		calls:  make(chan time.Time, 16),
		armed:  make(chan time.Duration, 16),
		result: make(chan error, 16),
	}
	g.r = newRunner(g.clock, minPeriod, period, func(context.Context) error {
		g.calls <- g.clock.Now()
		select {
		case err := <-g.result:
			return err
		default:
			return nil
		}
	})
	g.r.armed = func(d time.Duration) { g.armed <- d }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); g.r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return g
}

func (g *runnerRig) call(t *testing.T) time.Time {
	t.Helper()
	select {
	case at := <-g.calls:
		return at
	case <-time.After(10 * time.Second):
		t.Fatal("no call")
	}
	return time.Time{}
}

func (g *runnerRig) timer(t *testing.T, want time.Duration) {
	t.Helper()
	select {
	case d := <-g.armed:
		if d != want {
			t.Fatalf("timer set to %v, want %v", d, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no timer set (want %v)", want)
	}
}

func (g *runnerRig) noCall(t *testing.T) {
	t.Helper()
	select {
	case at := <-g.calls:
		t.Fatalf("unexpected call at %v", at)
	default:
	}
}

func TestRunnerWaitsForTheFirstTrigger(t *testing.T) {
	g := newRunnerRig(t, time.Second, 30*time.Second)
	g.clock.Step(time.Hour) // no timer yet: nothing may happen
	g.noCall(t)
	g.r.Trigger()
	if at := g.call(t); !at.Equal(g.clock.Now()) {
		t.Fatalf("first call at %v, want at once (%v)", at, g.clock.Now())
	}
	g.timer(t, 30*time.Second)
}

func TestRunnerKeepsMinSyncPeriodBetweenCalls(t *testing.T) {
	g := newRunnerRig(t, 5*time.Second, 30*time.Second)
	g.r.Trigger()
	start := g.call(t)
	g.timer(t, 30*time.Second)
	g.clock.Step(2 * time.Second)
	g.r.Trigger()
	g.timer(t, 3*time.Second)
	g.r.Trigger() // while waiting: still one call, at the same time
	g.timer(t, 3*time.Second)
	g.noCall(t)
	g.clock.Step(3 * time.Second)
	if at := g.call(t); at.Sub(start) != 5*time.Second {
		t.Fatalf("second call %v after the first, want minSyncPeriod 5s", at.Sub(start))
	}
	g.timer(t, 30*time.Second)
	g.noCall(t)
}

func TestRunnerCallsEverySyncPeriod(t *testing.T) {
	g := newRunnerRig(t, 0, 30*time.Second)
	g.r.Trigger()
	first := g.call(t)
	g.timer(t, 30*time.Second)
	g.clock.Step(30 * time.Second)
	if at := g.call(t); at.Sub(first) != 30*time.Second {
		t.Fatalf("periodic call after %v, want 30s", at.Sub(first))
	}
	g.timer(t, 30*time.Second)
	// A trigger with minSyncPeriod 0 runs at once, whenever it comes.
	g.clock.Step(time.Second)
	g.r.Trigger()
	if at := g.call(t); at.Sub(first) != 31*time.Second {
		t.Fatalf("triggered call after %v, want 31s", at.Sub(first))
	}
}

func TestRunnerRetriesAFailureWithBackoff(t *testing.T) {
	g := newRunnerRig(t, 0, 4*time.Second)
	fail := errors.New("boom")
	g.result <- fail
	g.r.Trigger()
	g.call(t)
	g.timer(t, time.Second)
	g.result <- fail
	g.clock.Step(time.Second)
	g.call(t)
	g.timer(t, 2*time.Second)
	g.result <- fail
	g.clock.Step(2 * time.Second)
	g.call(t)
	g.timer(t, 4*time.Second) // capped at syncPeriod
	g.result <- fail
	g.clock.Step(4 * time.Second)
	g.call(t)
	g.timer(t, 4*time.Second)
	g.clock.Step(4 * time.Second) // this one succeeds
	g.call(t)
	g.timer(t, 4*time.Second)
	// After a success the backoff starts again from the beginning.
	g.result <- fail
	g.r.Trigger()
	g.call(t)
	g.timer(t, time.Second)
}
