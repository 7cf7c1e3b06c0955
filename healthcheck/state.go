package healthcheck

import (
	"fmt"
	"net/netip"
	"time"
)

// State is a target's health as the Checker last decided it.
type State int

// The states. A target starts Unknown and never returns to it.
const (
	Unknown State = iota
	Up
	Down
)

// String returns unknown, up or down.
func (s State) String() string {
	switch s {
	case Unknown:
		return "unknown"
	case Up:
		return "up"
	case Down:
		return "down"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Event is one change of a target's state.
type Event[K comparable] struct {
	Key  K
	Addr netip.AddrPort
	Old  State
	New  State
	// Err is the last check's error: nil when it succeeded (New is Up).
	Err error
	// Time is when the last check ended; Latency is how long it took.
	Time    time.Time
	Latency time.Duration
}

// Result is one check's outcome (Config.Observe): the target, its state
// after the check (which this result may or may not have changed), the
// check's error (nil for a success), when it ended and how long it took.
type Result[K comparable] struct {
	Key     K
	Addr    netip.AddrPort
	State   State
	Err     error
	Time    time.Time
	Latency time.Duration
}

// String returns "key (addr): old -> new", and the error if any.
func (ev Event[K]) String() string {
	s := fmt.Sprintf("%v (%v): %v -> %v", ev.Key, ev.Addr, ev.Old, ev.New)
	if ev.Err != nil {
		s += ": " + ev.Err.Error()
	}
	return s
}

// counter counts consecutive results and decides the state.
type counter struct {
	state      State
	succ, fail int
}

// record adds one result and reports whether the state changed.
func (c *counter) record(ok bool, rise, fall int) (old State, changed bool) {
	old = c.state
	if ok {
		c.succ, c.fail = c.succ+1, 0
		if c.state != Up && c.succ >= rise {
			c.state = Up
		}
	} else {
		c.succ, c.fail = 0, c.fail+1
		if c.state != Down && c.fail >= fall {
			c.state = Down
		}
	}
	return old, c.state != old
}
