package agent

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/kube/metrics"
	"github.com/ipvskit/ipvskit/proxier"
)

// sliChange is one EndpointSlice change the agent's informer delivered:
// the slice, its last-change-trigger-time, and when the agent got it.
type sliChange struct {
	name               string
	trigger, delivered time.Time
}

// sliSample is a change and the sync that applied it: when the sync
// started (the runner called it), when its Proxier Sync or Update started
// and ended (the Proxier's SyncEvent), and when the sync returned.
type sliSample struct {
	sliChange
	syncStart, updateStart, updateEnd, syncEnd time.Time
	// whole says the sync was a Sync of the whole State (the first, the
	// periodic resync, or one after a failure) rather than an Update.
	whole bool
}

// sliTracer follows the changes carrying a trigger time through the agent,
// without changing it: it wraps the agent's changed hook (called after the
// change's key is pending) and the runner's function. A sync is charged
// with the changes delivered before it started: a change delivered while
// the sync takes its keys may have been applied by it but is charged to
// the next, so that error can only make a latency longer.
type sliTracer struct {
	mu      sync.Mutex
	pending []sliChange
	samples []sliSample
	syncs   int // syncs that applied at least one traced change
	// wholes are the Syncs of the whole State, start and end.
	wholes [][2]time.Time
	signal chan struct{}
}

// traceAgent makes r's next agent traced.
func traceAgent(r *rig) *sliTracer {
	tr := &sliTracer{signal: make(chan struct{}, 1)}
	r.prepare = func(a *Agent) {
		changed := a.hooks.changed
		a.hooks.changed = func(kind string, obj any) {
			tr.changed(kind, obj)
			if changed != nil {
				changed(kind, obj)
			}
		}
		fn := a.runner.fn
		a.runner.fn = func(ctx context.Context) error {
			start := time.Now()
			tr.mu.Lock()
			batch := tr.pending
			tr.pending = nil
			tr.mu.Unlock()
			last := a.lastWhole
			err := fn(ctx)
			tr.synced(batch, start, time.Now(), r.lastEvent(start), a.lastWhole != last, err)
			return err
		}
	}
	return tr
}

func (tr *sliTracer) changed(kind string, obj any) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if kind != kindSlice || !ok {
		return
	}
	at, ok := metrics.ParseTriggerTime(s.Annotations[corev1.EndpointsLastChangeTriggerTime])
	if !ok {
		return
	}
	now := time.Now()
	tr.mu.Lock()
	tr.pending = append(tr.pending, sliChange{name: s.Name, trigger: at, delivered: now})
	tr.mu.Unlock()
}

func (tr *sliTracer) synced(batch []sliChange, start, end time.Time, ev *proxier.SyncEvent, whole bool, err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if err != nil {
		tr.pending = append(batch, tr.pending...)
		return
	}
	if whole {
		tr.wholes = append(tr.wholes, [2]time.Time{start, end})
	}
	if len(batch) == 0 {
		return
	}
	s := sliSample{syncStart: start, updateStart: end, updateEnd: end, syncEnd: end, whole: whole}
	if ev != nil {
		s.updateStart, s.updateEnd = ev.Start, ev.Start.Add(ev.Duration)
	}
	for _, c := range batch {
		s.sliChange = c
		tr.samples = append(tr.samples, s)
	}
	tr.syncs++
	select {
	case tr.signal <- struct{}{}:
	default:
	}
}

// wait returns the sample of the change of slice name with trigger time
// at, once a sync has applied it.
func (tr *sliTracer) wait(tb testing.TB, name string, at time.Time) sliSample {
	tb.Helper()
	deadline := time.After(patience)
	for {
		tr.mu.Lock()
		for i := len(tr.samples) - 1; i >= 0; i-- {
			if s := tr.samples[i]; s.name == name && s.trigger.Equal(at) {
				tr.mu.Unlock()
				return s
			}
		}
		tr.mu.Unlock()
		select {
		case <-tr.signal:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			tb.Fatalf("the change of %s at %v: not applied after %v", name, at, patience)
		}
	}
}

// waitCount waits until n samples are in, for at most patience.
func (tr *sliTracer) waitCount(tb testing.TB, n int) {
	tb.Helper()
	deadline := time.After(patience)
	for {
		tr.mu.Lock()
		got := len(tr.samples)
		tr.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-tr.signal:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			tb.Fatalf("%d changes applied after %v, want %d", got, patience, n)
		}
	}
}

// take returns the samples, the count of syncs that applied them and the
// whole Syncs made meanwhile, and starts anew.
func (tr *sliTracer) take() ([]sliSample, int, [][2]time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s, n, w := tr.samples, tr.syncs, tr.wholes
	tr.samples, tr.syncs, tr.wholes = nil, 0, nil
	return s, n, w
}

// behindWhole splits samples into the changes delivered while a whole
// Sync ran (or applied by one) and the others.
func behindWhole(samples []sliSample, wholes [][2]time.Time) (behind, rest []sliSample) {
	for _, s := range samples {
		in := s.whole
		for _, w := range wholes {
			in = in || (!s.delivered.Before(w[0]) && s.delivered.Before(w[1]))
		}
		if in {
			behind = append(behind, s)
		} else {
			rest = append(rest, s)
		}
	}
	return behind, rest
}

// lastEvent is the last SyncEvent of r's Proxier, if it started at or
// after since.
func (r *rig) lastEvent(since time.Time) *proxier.SyncEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.events) == 0 || r.events[len(r.events)-1].Start.Before(since) {
		return nil
	}
	return r.events[len(r.events)-1]
}

// arrivals tell when a destination reaches the fake kernel: the moment
// the Proxier's IPVS batch adding it has been applied (notifyIPVS).
type arrivals struct {
	mu   sync.Mutex
	want map[netip.Addr]chan time.Time
}

// expect returns a channel that gets the time a destination at addr is
// added.
func (a *arrivals) expect(addr netip.Addr) <-chan time.Time {
	ch := make(chan time.Time, 1)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.want == nil {
		a.want = map[netip.Addr]chan time.Time{}
	}
	a.want[addr] = ch
	return ch
}

func (a *arrivals) applied(b *ipvs.Batch) {
	at := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.want) == 0 {
		return
	}
	for _, op := range b.All() {
		if ch, ok := a.want[op.Destination.Addr]; ok && op.Kind == ipvs.OpAddDestination {
			ch <- at
			delete(a.want, op.Destination.Addr)
		}
	}
}

// notifyIPVS is the Proxier's IPVS, telling arrivals of each batch applied.
type notifyIPVS struct {
	proxier.IPVS
	a *arrivals
}

func (n notifyIPVS) Apply(ctx context.Context, b *ipvs.Batch) error {
	err := n.IPVS.Apply(ctx, b)
	if err == nil {
		n.a.applied(b)
	}
	return err
}

// quantiles are a sample's p50 and p99 (nearest rank).
func quantiles(ds []time.Duration) (p50, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p int) time.Duration { return s[max(0, (len(s)*p+99)/100-1)] }
	return rank(50), rank(99)
}

// phases logs the p50/p99 of each phase of samples: trigger -> delivered
// (the API write and the watch), delivered -> sync start (the runner's
// queue and rate limit), sync start -> the Proxier's Update or Sync
// (conversion), the Update itself, its end -> the sync's return, and the
// SLI, trigger -> the sync's return.
func phases(tb testing.TB, what string, samples []sliSample) {
	tb.Helper()
	cols := []struct {
		name string
		d    func(s sliSample) time.Duration
	}{
		{"write+watch", func(s sliSample) time.Duration { return s.delivered.Sub(s.trigger) }},
		{"queue", func(s sliSample) time.Duration { return s.syncStart.Sub(s.delivered) }},
		{"convert", func(s sliSample) time.Duration { return s.updateStart.Sub(s.syncStart) }},
		{"update", func(s sliSample) time.Duration { return s.updateEnd.Sub(s.updateStart) }},
		{"after", func(s sliSample) time.Duration { return s.syncEnd.Sub(s.updateEnd) }},
		{"sli", func(s sliSample) time.Duration { return s.syncEnd.Sub(s.trigger) }},
	}
	line := fmt.Sprintf("%s (%d changes), p50/p99:", what, len(samples))
	for _, c := range cols {
		ds := make([]time.Duration, len(samples))
		for i, s := range samples {
			ds[i] = c.d(s)
		}
		p50, p99 := quantiles(ds)
		line += fmt.Sprintf(" %s %v/%v", c.name, p50.Round(time.Microsecond), p99.Round(time.Microsecond))
	}
	tb.Log(line)
}
