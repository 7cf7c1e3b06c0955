package healthcheck

import (
	"errors"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/inet"
)

// Observe sees every check, those that change no state too, each with its
// error and the state after it, and before Notify's event for that check.
func TestObserveEveryResult(t *testing.T) {
	type seen struct {
		r      Result[string]
		events int // events delivered before this result
	}
	results := make(chan seen, 64)
	events := make(chan Event[string], 64)
	var delivered int
	c, err := New(&Config[string]{
		Observe: func(r Result[string]) { results <- seen{r, delivered} },
		Notify:  func(ev Event[string]) { delivered++; events <- ev },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ck := scripted([]bool{true, false, true}, nil)
	ck.Rise, ck.Fall = 1, 2 // check 1: Up; check 2: still Up; check 3: Up
	if err := c.Set("x", Target{Check: ck}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		state  State
		failed bool
		events int
	}{{Up, false, 0}, {Up, true, 1}, {Up, false, 1}} {
		select {
		case s := <-results:
			if s.r.Key != "x" || s.r.State != want.state || (s.r.Err != nil) != want.failed || s.events != want.events || s.r.Latency <= 0 {
				t.Fatalf("result %d: %+v after %d events; want state %v, failed %v, after %d events", i, s.r, s.events, want.state, want.failed, want.events)
			}
		case <-time.After(eventWait):
			t.Fatalf("no result %d within %v", i, eventWait)
		}
	}
	if ev := next(t, events); ev.New != Up || len(events) != 0 {
		t.Fatalf("events: %v and %d more; want one, Unknown -> Up", ev, len(events))
	}
}

// Check.Validate refuses what Set refuses, named from Check, with no
// Checker.
func TestCheckValidate(t *testing.T) {
	if err := check(TCP, time.Second).Validate(); err != nil {
		t.Fatalf("a valid check: %v", err)
	}
	bad := Check{Type: HTTP, Interval: time.Second, Timeout: 2 * time.Second, Rise: 0, Fall: 1, HTTP: HTTPCheck{Path: "no slash"}}
	err := bad.Validate()
	var ie inet.InputError
	if !errors.As(err, &ie) {
		t.Fatalf("Validate: %v, want an inet.InputError", err)
	}
	paths := map[string]bool{}
	for _, f := range ie.Fields() {
		paths[f.Path] = true
	}
	for _, p := range []string{"Check.Timeout", "Check.Rise"} {
		if !paths[p] {
			t.Errorf("Validate refused %v; want %s among them", ie.Fields(), p)
		}
	}
	c, _ := start(t, Config[string]{})
	if err := c.Set("x", Target{Check: bad}); err == nil {
		t.Fatal("Set took what Validate refused")
	}
}
