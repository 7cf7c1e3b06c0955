package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// target is where a client loop sends requests, and from where.
type target struct {
	what string // for messages: "web's ClusterIP from pod-0"
	from *testutil.NetNS
	addr string
}

// clientLoop sends requests to its targets until stopped: each target from
// a goroutine of its own inside the namespace it is asked from, one
// request every 100 ms, each a whole connection and answer within 2 s. It
// counts the answers of each target in each phase of the test, and every
// failure.
type clientLoop struct {
	targets []target
	cancel  context.CancelFunc
	running sync.WaitGroup
	phase   atomic.Int64 // index in phases

	mu     sync.Mutex
	phases []string
	ok     [][]int // [phase][target]
	fails  []string
}

func startClientLoop(t *testing.T, phase string, targets ...target) *clientLoop {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &clientLoop{targets: targets, cancel: cancel, phases: []string{phase}, ok: [][]int{make([]int, len(targets))}}
	for i, tg := range targets {
		l.running.Add(1)
		go func() {
			defer l.running.Done()
			tg.from.Do(t, func() { l.run(ctx, i) })
		}()
	}
	t.Cleanup(l.stop)
	return l
}

func (l *clientLoop) run(ctx context.Context, i int) {
	pace := time.NewTicker(100 * time.Millisecond)
	defer pace.Stop()
	tg := l.targets[i]
	for {
		p := l.phase.Load()
		_, _, err := request(tg.addr, 2*time.Second)
		l.mu.Lock()
		if err != nil {
			l.fails = append(l.fails, fmt.Sprintf("%s: %s (%s): %v", l.phases[p], tg.what, tg.addr, err))
		} else {
			l.ok[p][i]++
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-pace.C: // pacing, not synchronisation
		}
	}
}

// next starts the phase named.
func (l *clientLoop) next(phase string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.phases = append(l.phases, phase)
	l.ok = append(l.ok, make([]int, len(l.targets)))
	l.phase.Store(int64(len(l.phases) - 1))
}

// answered waits until every target has answered once more in this phase
// than when it was called: the loop ran after what the phase did.
func (l *clientLoop) answered(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	p := len(l.phases) - 1
	before := append([]int(nil), l.ok[p]...)
	l.mu.Unlock()
	deadline := time.Now().Add(time.Minute)
	for {
		l.mu.Lock()
		var silent []string
		for i, n := range l.ok[p] {
			if n <= before[i] {
				silent = append(silent, l.targets[i].what)
			}
		}
		fails := strings.Join(l.fails, "\n")
		l.mu.Unlock()
		if len(silent) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no answer in a minute from %s; failed requests so far:\n%s", l.phases[p], strings.Join(silent, ", "), fails)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, with a deadline
	}
}

// stop ends the loop and waits for its goroutines; it may be called again.
func (l *clientLoop) stop() {
	l.cancel()
	l.running.Wait()
}

// check stops the loop and fails t if any request failed, or if a target
// had no answer in a phase; it logs the answers counted.
func (l *clientLoop) check(t *testing.T) {
	t.Helper()
	l.stop()
	if len(l.fails) > 0 {
		t.Errorf("%d requests failed, want none:\n%s", len(l.fails), strings.Join(l.fails, "\n"))
	}
	for p, counts := range l.ok {
		var line []string
		for i, n := range counts {
			line = append(line, fmt.Sprintf("%s %d", l.targets[i].what, n))
			if n == 0 {
				t.Errorf("%s: no answer from %s", l.phases[p], l.targets[i].what)
			}
		}
		t.Logf("%s: answers: %s", l.phases[p], strings.Join(line, ", "))
	}
}
