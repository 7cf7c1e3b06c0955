package healthcheck

import (
	"container/heap"
	"context"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"
)

// entry is one target: what to check, its counts, and when it is due.
type entry[K comparable] struct {
	key   K
	addr  netip.AddrPort
	p     *probe // replaced by Set; read under scheduler.mu
	cnt   counter
	due   time.Time
	index int // in the heap; -1 while out (being checked, or removed)

	removed bool       // under scheduler.mu
	deliver sync.Mutex // held while a result is recorded and its event delivered
}

// scheduler keeps the targets in a heap ordered by due time; its run loop
// hands each due target to the workers, which push it back when its check
// is recorded. A target is in the heap or in one worker's hands, never both,
// so it is never checked twice at once.
type scheduler[K comparable] struct {
	mu      sync.Mutex
	entries map[K]*entry[K]
	heap    entryHeap[K]
	closed  bool
	wake    chan struct{} // the earliest due time moved earlier
	work    chan *entry[K]
}

func (s *scheduler[K]) init(workers int) {
	s.entries = make(map[K]*entry[K])
	s.wake = make(chan struct{}, 1)
	s.work = make(chan *entry[K], workers)
}

// run hands due targets to the workers until ctx ends.
func (s *scheduler[K]) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var batch []*entry[K]
	for {
		s.mu.Lock()
		now := time.Now()
		batch = batch[:0]
		for len(s.heap) > 0 && !s.heap[0].due.After(now) {
			batch = append(batch, heap.Pop(&s.heap).(*entry[K]))
		}
		wait := time.Hour
		if len(s.heap) > 0 {
			wait = s.heap[0].due.Sub(now)
		}
		s.mu.Unlock()
		for _, e := range batch {
			select {
			case s.work <- e:
			case <-ctx.Done():
				return
			}
		}
		if len(batch) > 0 {
			continue // time passed while the workers were busy
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-s.wake:
		case <-ctx.Done():
			return
		}
	}
}

// push schedules e at due and wakes run if e is now the first.
func (s *scheduler[K]) push(e *entry[K], due time.Time) {
	e.due = due
	heap.Push(&s.heap, e)
	if e.index == 0 {
		s.poke()
	}
}

func (s *scheduler[K]) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// reschedule puts e back after a check that started at start and ended at
// end.
func (s *scheduler[K]) reschedule(e *entry[K], start, end time.Time, ok bool) {
	wait := e.p.Interval
	if !ok && e.cnt.state != Down && e.p.RetryInterval > 0 {
		wait = e.p.RetryInterval
	}
	next := start.Add(jittered(wait, e.p.Jitter))
	if next.Before(end) {
		next = end
	}
	s.push(e, next)
}

// jittered returns d varied by a random amount in [-j, +j], never below 0.
func jittered(d, j time.Duration) time.Duration {
	if j > 0 {
		d += time.Duration(rand.Int64N(int64(2*j)+1)) - j
	}
	return max(d, 0)
}

// firstDue is when a new target is first checked.
func firstDue(now time.Time, p *probe) time.Time {
	if p.Jitter <= 0 {
		return now
	}
	return now.Add(time.Duration(rand.Int64N(int64(p.Jitter) + 1)))
}

func (s *scheduler[K]) add(key K, addr netip.AddrPort, p *probe) {
	e := &entry[K]{key: key, addr: addr, p: p, index: -1}
	s.entries[key] = e
	s.push(e, firstDue(time.Now(), p))
}

// update gives e a new probe of the same type. A shorter interval pulls a
// waiting check in, so that it is due within the new interval.
func (s *scheduler[K]) update(e *entry[K], p *probe) {
	old := e.p
	e.p = p
	if e.index < 0 || p.Interval >= old.Interval {
		return
	}
	if limit := time.Now().Add(jittered(p.Interval, p.Jitter)); e.due.After(limit) {
		e.due = limit
		heap.Fix(&s.heap, e.index)
		if e.index == 0 {
			s.poke()
		}
	}
}

// drop removes e; the caller holds e.deliver and s.mu.
func (s *scheduler[K]) drop(e *entry[K]) {
	e.removed = true
	delete(s.entries, e.key)
	if e.index >= 0 {
		heap.Remove(&s.heap, e.index)
	}
}

func (s *scheduler[K]) set(key K, addr netip.AddrPort, p *probe) error {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return ErrClosed
		}
		e := s.entries[key]
		if e == nil {
			s.add(key, addr, p)
			s.mu.Unlock()
			return nil
		}
		if e.addr == addr && e.p.Type == p.Type {
			s.update(e, p)
			s.mu.Unlock()
			return nil
		}
		s.mu.Unlock()
		// A new address or type: the old entry goes, with the same
		// guarantee as remove, and a new one starts.
		e.deliver.Lock()
		s.mu.Lock()
		done := s.entries[key] == e && !s.closed
		if done {
			s.drop(e)
			s.add(key, addr, p)
		}
		s.mu.Unlock()
		e.deliver.Unlock()
		if done {
			return nil
		}
	}
}

func (s *scheduler[K]) remove(key K) {
	s.mu.Lock()
	e := s.entries[key]
	s.mu.Unlock()
	if e == nil {
		return
	}
	e.deliver.Lock() // waits for an event being delivered
	s.mu.Lock()
	if s.entries[key] == e {
		s.drop(e)
	}
	s.mu.Unlock()
	e.deliver.Unlock()
}

func (s *scheduler[K]) replace(targets map[K]Target, probes map[K]*probe) error {
	s.mu.Lock()
	var gone []K
	for k := range s.entries {
		if _, ok := targets[k]; !ok {
			gone = append(gone, k)
		}
	}
	s.mu.Unlock()
	for _, k := range gone {
		s.remove(k)
	}
	for k, t := range targets {
		if err := s.set(k, t.Addr, probes[k]); err != nil {
			return err
		}
	}
	return nil
}

func (s *scheduler[K]) state(key K) (State, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key]
	if e == nil {
		return Unknown, false
	}
	return e.cnt.state, true
}

func (s *scheduler[K]) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// close marks the scheduler closed; it reports false if it already was.
func (s *scheduler[K]) close() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.closed = true
	return true
}

// entryHeap orders entries by due time (container/heap).
type entryHeap[K comparable] []*entry[K]

func (h entryHeap[K]) Len() int           { return len(h) }
func (h entryHeap[K]) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h entryHeap[K]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *entryHeap[K]) Push(x any) {
	e := x.(*entry[K])
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *entryHeap[K]) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}
