package healthcheck

import (
	"context"
	"errors"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// scripted returns a Func check whose results follow script (true = pass),
// then pass forever; calls counts the calls.
func scripted(script []bool, calls *atomic.Int64) Check {
	ck := check(Func, 5*time.Millisecond)
	var n atomic.Int64
	if calls == nil {
		calls = &n
	}
	ck.Func = func(context.Context) error {
		i := calls.Add(1) - 1
		if i < int64(len(script)) && !script[i] {
			return errors.New("scripted failure")
		}
		return nil
	}
	return ck
}

// A target's next check starts after its event is delivered, so Notify sees
// exactly how many checks made the change.
func TestRiseAndFall(t *testing.T) {
	type change struct {
		ev    Event[string]
		calls int64
	}
	var calls atomic.Int64
	changes := make(chan change, 10)
	c, err := New(&Config[string]{Notify: func(ev Event[string]) { changes <- change{ev, calls.Load()} }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	//                  0     1      2     3     4      5      6      7     8
	script := []bool{true, false, true, true, false, false, false, true, true}
	ck := scripted(script, &calls)
	ck.Rise, ck.Fall = 2, 3
	if err := c.Set("x", Target{Check: ck}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		old, new State
		calls    int64
	}{
		{Unknown, Up, 4}, // one failure resets the successes
		{Up, Down, 7},
		{Down, Up, 9},
	} {
		select {
		case ch := <-changes:
			if ch.ev.Old != want.old || ch.ev.New != want.new || ch.calls != want.calls || (ch.ev.Err == nil) != (want.new == Up) {
				t.Errorf("%v after %d checks; want %v -> %v after %d", ch.ev, ch.calls, want.old, want.new, want.calls)
			}
		case <-time.After(eventWait):
			t.Fatalf("no change within %v; want %v -> %v", eventWait, want.old, want.new)
		}
	}
}

func TestRetryInterval(t *testing.T) {
	c, events := start(t, Config[string]{})
	ck := check(Func, time.Hour) // without RetryInterval, no second check for an hour
	ck.Timeout = time.Second
	ck.RetryInterval = time.Millisecond
	ck.Fall = 2
	ck.Func = func(context.Context) error { return errors.New("refused") }
	if err := c.Set("x", Target{Check: ck}); err != nil {
		t.Fatal(err)
	}
	expect(t, events, "x", Unknown, Down)
}

// A target removed while its check runs gets no event: the one worker
// records the removed target's result before it checks the next target.
func TestRemoveDuringCheck(t *testing.T) {
	c, events := start(t, Config[string]{Workers: 1})
	started, release := make(chan struct{}), make(chan struct{})
	ck := check(Func, time.Second)
	ck.Func = func(context.Context) error { close(started); <-release; return nil }
	if err := c.Set("gone", Target{Check: ck}); err != nil {
		t.Fatal(err)
	}
	<-started
	c.Remove("gone")
	if _, ok := c.State("gone"); ok || c.Len() != 0 {
		t.Errorf("State(gone) found after Remove, Len %d", c.Len())
	}
	if err := c.Set("next", Target{Check: scripted(nil, nil)}); err != nil {
		t.Fatal(err)
	}
	close(release)
	expect(t, events, "next", Unknown, Up)
	select {
	case ev := <-events:
		t.Errorf("event after the target went: %v", ev)
	default:
	}
}

func TestSetKeepsOrRestarts(t *testing.T) {
	c, events := start(t, Config[string]{})
	a := netip.MustParseAddrPort("198.18.0.1:80")
	ck := scripted(nil, nil)
	if err := c.Set("x", Target{Addr: a, Check: ck}); err != nil {
		t.Fatal(err)
	}
	expect(t, events, "x", Unknown, Up)
	ck.Interval = time.Hour // a timing change keeps the state
	ck.Timeout = time.Second
	if err := c.Set("x", Target{Addr: a, Check: ck}); err != nil {
		t.Fatal(err)
	}
	if s, _ := c.State("x"); s != Up {
		t.Errorf("state %v after a timing change, want up", s)
	}
	// A new address starts over: Unknown at once, then a fresh Up event.
	ck.Func = func(context.Context) error { return nil }
	if err := c.Set("x", Target{Addr: netip.MustParseAddrPort("198.18.0.2:80"), Check: ck}); err != nil {
		t.Fatal(err)
	}
	ev := expect(t, events, "x", Unknown, Up)
	if ev.Addr.Addr() != netip.MustParseAddr("198.18.0.2") {
		t.Errorf("event for %v, want the new address", ev.Addr)
	}
}

func TestReplace(t *testing.T) {
	c, events := start(t, Config[int]{})
	targets := map[int]Target{}
	for i := range 5 {
		targets[i] = Target{Check: scripted(nil, nil)}
	}
	if err := c.Replace(targets); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for range 5 {
		seen[next(t, events).Key] = true
	}
	delete(targets, 0)
	delete(targets, 1)
	targets[9] = Target{Check: scripted(nil, nil)}
	if err := c.Replace(targets); err != nil {
		t.Fatal(err)
	}
	expect(t, events, 9, Unknown, Up)
	if c.Len() != 4 {
		t.Errorf("Len %d after Replace, want 4", c.Len())
	}
	for _, k := range []int{0, 1} {
		if _, ok := c.State(k); ok {
			t.Errorf("target %d still there after Replace", k)
		}
	}
	if s, ok := c.State(2); !ok || s != Up {
		t.Errorf("kept target 2: %v, %v; want up (not restarted)", s, ok)
	}
}

func TestClose(t *testing.T) {
	c, err := New[string](nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set("x", Target{Check: scripted(nil, nil)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("y", Target{Check: scripted(nil, nil)}); !errors.Is(err, ErrClosed) {
		t.Errorf("Set after Close: %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
