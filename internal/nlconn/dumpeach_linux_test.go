package nlconn

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// DumpEach's tests dump addresses and links of a fresh namespace, with
// requests of both kinds mixed, so that each reply can be checked against
// the request it answers.

var getLinks = netlink.Message{
	Header: netlink.Header{Type: unix.RTM_GETLINK},
	Data:   make([]byte, unix.SizeofIfInfomsg),
}

// badType is a message type rtnetlink does not know: the kernel refuses it
// with EOPNOTSUPP.
var badType = netlink.Message{Header: netlink.Header{Type: 0x7ff0}}

// eachAddrs adds n addresses to lo and returns requests alternating an
// address dump (even indexes) and a link dump (odd ones).
func eachSetup(t *testing.T, c *Conn, n, requests int) []netlink.Message {
	t.Helper()
	msgs := make([]netlink.Message, n)
	for i := range msgs {
		msgs[i] = addrMsg(testAddr(i+1), 32)
	}
	if errs, err := c.Batch(t.Context(), msgs, BatchOptions{}); err != nil || errors.Join(errs...) != nil {
		t.Fatalf("adding %d addresses: %v %v", n, err, errors.Join(errs...))
	}
	reqs := make([]netlink.Message, requests)
	for i := range reqs {
		reqs[i] = getAddrs
		if i%2 == 1 {
			reqs[i] = getLinks
		}
	}
	return reqs
}

// dumpEachGoroutines counts the goroutines running DumpEach's workers.
func dumpEachGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "nlconn.(*Conn).DumpEach.func")
}

// leftGoroutines is how many of DumpEach's workers are left once those
// that said they were done (DumpEach returns then) have exited: a worker
// still runs its last instructions after it signalled, which the race
// detector's slower scheduling makes visible. It yields until none is
// left, for at most 5 s.
func leftGoroutines() int {
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := dumpEachGoroutines()
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		runtime.Gosched()
	}
}

// Every request's dump reaches fn whole and under its own index, the calls
// of one w never overlap, and the sockets are kept for the next call.
func TestIntegrationDumpEach(t *testing.T) {
	c, _ := dialNS(t)
	const addrs, requests, parallel = 300, 60, 3
	reqs := eachSetup(t, c, addrs, requests)
	// How many messages each kind of dump has, by Dump (a kernel with
	// tunnel modules puts their fallback links in every namespace).
	var want [2]int
	for k, m := range []netlink.Message{getAddrs, getLinks} {
		if err := c.Dump(t.Context(), m, func(netlink.Header, []byte) error { want[k]++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if want[0] != addrs+1 { // and 127.0.0.1
		t.Fatalf("Dump saw %d addresses, want %d", want[0], addrs+1)
	}
	for round := range 2 {
		var (
			mu     sync.Mutex
			counts = make([]int, requests)
			busy   [parallel]atomic.Int32
		)
		failed, err := c.DumpEach(t.Context(), reqs, parallel, func(w, i int, h netlink.Header, data []byte) error {
			if w < 0 || w >= parallel {
				return fmt.Errorf("w = %d, want 0 <= w < %d", w, parallel)
			}
			if busy[w].Add(1) != 1 {
				return fmt.Errorf("two calls of w %d at once", w)
			}
			defer busy[w].Add(-1)
			want := netlink.HeaderType(unix.RTM_NEWADDR)
			if i%2 == 1 {
				want = unix.RTM_NEWLINK
			}
			if h.Type != want {
				return fmt.Errorf("request %d: reply of type %d, want %d", i, h.Type, want)
			}
			mu.Lock()
			counts[i]++
			mu.Unlock()
			return nil
		})
		if err != nil {
			t.Fatalf("round %d: DumpEach failed at %d: %v", round, failed, err)
		}
		for i, n := range counts {
			if n != want[i%2] {
				t.Errorf("round %d, request %d: %d messages, want %d", round, i, n, want[i%2])
			}
		}
		c.mu.Lock()
		spare := len(c.spare)
		c.mu.Unlock()
		if spare != parallel {
			t.Errorf("round %d: %d sockets kept, want %d", round, spare, parallel)
		}
		if n := leftGoroutines(); n != 0 {
			t.Errorf("round %d: %d of DumpEach's goroutines still running after it returned", round, n)
		}
	}
}

// A kernel error and fn's error each stop DumpEach and come back with the
// index of their request (the lowest one that failed); the Conn stays usable.
func TestIntegrationDumpEachErrors(t *testing.T) {
	c, _ := dialNS(t)
	reqs := eachSetup(t, c, 20, 200)

	bad := append([]netlink.Message(nil), reqs...)
	bad[77], bad[150] = badType, badType
	var last atomic.Int64
	failed, err := c.DumpEach(t.Context(), bad, 3, func(w, i int, h netlink.Header, data []byte) error {
		for {
			if l := last.Load(); int64(i) <= l || last.CompareAndSwap(l, int64(i)) {
				return nil
			}
		}
	})
	var kerr *Error
	if !errors.As(err, &kerr) || !errors.Is(err, unix.EOPNOTSUPP) || failed != 77 {
		t.Fatalf("DumpEach with request 77 refused: failed %d, err %v; want 77 and EOPNOTSUPP", failed, err)
	}
	// Requests start in index order; after 77 failed, only those already
	// in flight ran on.
	if n := last.Load(); n >= 100 {
		t.Errorf("fn saw request %d: DumpEach did not stop at the failure of 77", n)
	}

	stop := errors.New("stop here")
	failed, err = c.DumpEach(t.Context(), reqs, 3, func(w, i int, h netlink.Header, data []byte) error {
		if i == 33 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || failed != 33 {
		t.Fatalf("fn failing at request 33: failed %d, err %v", failed, err)
	}
	if n := leftGoroutines(); n != 0 {
		t.Errorf("%d of DumpEach's goroutines still running after it failed", n)
	}
	// The sockets are usable afterwards (the failed dumps were drained).
	if failed, err := c.DumpEach(t.Context(), reqs, 3, func(int, int, netlink.Header, []byte) error { return nil }); err != nil {
		t.Fatalf("DumpEach after failures: %d %v", failed, err)
	}
	if err := c.Dump(t.Context(), getAddrs, func(netlink.Header, []byte) error { return nil }); err != nil {
		t.Fatalf("Dump after DumpEach's failures: %v", err)
	}
}

// A ctx cancelled before the call sends nothing; one cancelled during it
// stops it between requests, with an error wrapping context.Canceled; the
// Conn works afterwards.
func TestIntegrationDumpEachContext(t *testing.T) {
	c, _ := dialNS(t)
	reqs := eachSetup(t, c, 20, 200)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	called := false
	failed, err := c.DumpEach(ctx, reqs, 2, func(int, int, netlink.Header, []byte) error { called = true; return nil })
	if !errors.Is(err, context.Canceled) || failed != -1 || called {
		t.Fatalf("DumpEach with a cancelled ctx: failed %d, err %v, fn called %v", failed, err, called)
	}

	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	var mu sync.Mutex
	seen := map[int]bool{}
	var late []int // requests whose first message came after the cancel
	cancelled, inside := false, 0
	_, err = c.DumpEach(ctx, reqs, 2, func(w, i int, h netlink.Header, data []byte) error {
		mu.Lock()
		defer mu.Unlock()
		if !seen[i] && cancelled {
			late = append(late, i)
		}
		seen[i] = true
		if i == 10 && !cancelled {
			inside = dumpEachGoroutines()
			cancel()
			cancelled = true
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("DumpEach cancelled at request 10: %v, want context.Canceled", err)
	}
	// No request starts once ctx has ended: the only ones heard from for
	// the first time after the cancel are those the other worker (of 2)
	// had in flight, at most one. (Which one depends on how far the other
	// worker got while request 10 waited for the kernel: not a bound on
	// the index.)
	if len(late) > 1 || len(seen) == len(reqs) {
		t.Errorf("fn first heard from requests %v after ctx was cancelled at the 11th, and saw %d of %d; want at most 1, and not all", late, len(seen), len(reqs))
	}
	if n := leftGoroutines(); n != 0 || inside == 0 {
		t.Errorf("%d of DumpEach's goroutines running inside fn, %d after ctx ended it; want some, then none", inside, n)
	}
	if _, err := c.DumpEach(t.Context(), reqs, 2, func(int, int, netlink.Header, []byte) error { return nil }); err != nil {
		t.Fatalf("DumpEach after a cancelled one: %v", err)
	}
}

// Close closes the kept sockets too; DumpEach after Close fails.
func TestIntegrationDumpEachClose(t *testing.T) {
	c, _ := dialNS(t)
	reqs := eachSetup(t, c, 1, 4)
	if _, err := c.DumpEach(t.Context(), reqs, 4, func(int, int, netlink.Header, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	kept := append([]*sock(nil), c.spare...)
	c.mu.Unlock()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range kept {
		if err := s.raw.Control(func(uintptr) {}); err == nil {
			t.Errorf("a kept socket is still open after Close")
		}
	}
	if _, err := c.DumpEach(t.Context(), reqs, 2, func(int, int, netlink.Header, []byte) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("DumpEach after Close: %v, want ErrClosed", err)
	}
}
