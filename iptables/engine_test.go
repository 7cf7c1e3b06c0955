package iptables

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// fakeWriter records what the engine asks of it and fails on demand.
type fakeWriter struct {
	fam   Family
	calls []string
	// fail, if set, is returned by the next write (then cleared).
	fail error
	// deltas is the last writeDeltas' d; old its old.
	deltas setDeltas
	old    *Ruleset
	full   *Ruleset // the last writeFull's r
	limit  error
	ledger *Ruleset
}

func (w *fakeWriter) kind() string            { return "iptables" }
func (w *fakeWriter) family() Family          { return w.fam }
func (w *fakeWriter) limits(r *Ruleset) error { return w.limit }
func (w *fakeWriter) removeOwn(context.Context) error {
	w.calls = append(w.calls, "remove")
	return nil
}

func (w *fakeWriter) writeFull(_ context.Context, r *Ruleset, repair bool) error {
	w.calls = append(w.calls, fmt.Sprintf("full repair=%v", repair))
	w.full = r
	return w.failed()
}

func (w *fakeWriter) writeDeltas(_ context.Context, old, r *Ruleset, d *setDeltas) error {
	w.calls = append(w.calls, "deltas")
	w.old, w.deltas = old, *d
	return w.failed()
}

func (w *fakeWriter) drift(_ context.Context, r *Ruleset) ([]ObjectDrift, error) {
	w.calls = append(w.calls, "drift")
	return nil, nil
}

func (w *fakeWriter) ownLedger(context.Context) (*Ruleset, error) { return w.ledger, nil }

func (w *fakeWriter) failed() error {
	err := w.fail
	w.fail = nil
	return err
}

// take returns the calls since the last take.
func (w *fakeWriter) take() []string {
	c := w.calls
	w.calls = nil
	return c
}

func wantCalls(t *testing.T, w *fakeWriter, want ...string) {
	t.Helper()
	if got := w.take(); !slices.Equal(got, want) {
		t.Fatalf("writer calls %q, want %q", got, want)
	}
}

// synced returns an engine that applied sample(IPv4) through a fake
// writer, a full sync, and that ruleset.
func synced(t *testing.T) (*syncEngine, *fakeWriter, *Ruleset) {
	t.Helper()
	e, w, r := &syncEngine{}, &fakeWriter{fam: IPv4}, sample(IPv4, Options{})
	if err := e.apply(context.Background(), w, r, false); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, w, "full repair=false")
	return e, w, r
}

// An incremental sync that fails leaves want the ruleset it attempted (a
// copy: the caller may change theirs) and makes the next Apply full.
func TestEngineFailedDeltasMakeTheNextApplyFull(t *testing.T) {
	ctx := context.Background()
	e, w, r := synced(t)
	vip := AddrPort(mustAddr("198.18.0.9"), TCP, 80)
	r.Add(VirtualServers, vip)
	injected := errors.New("injected")
	w.fail = injected
	if err := e.apply(ctx, w, r, false); !errors.Is(err, injected) {
		t.Fatalf("Apply: %v, want the failed write's error", err)
	}
	wantCalls(t, w, "deltas")
	if e.stats.Full || !slices.Equal(w.deltas[VirtualServers].Add, []Member{vip}) || w.old.Has(VirtualServers, vip) {
		t.Fatalf("deltas %+v of old without %v, stats %+v: want an incremental sync adding it", w.deltas[VirtualServers], vip, e.stats)
	}
	if e.want == r || !e.want.Equal(r) || e.last != nil {
		t.Fatalf("after the failure want is r itself %v or differs %v, last %v: want a copy of r, last nil", e.want == r, !e.want.Equal(r), e.last)
	}
	r.Remove(VirtualServers, vip)
	if !e.want.Has(VirtualServers, vip) {
		t.Fatal("want changed with the caller's ruleset")
	}
	if err := e.apply(ctx, w, r, false); err != nil || !e.stats.Full {
		t.Fatalf("Apply after the failure: %v, stats %+v: want a full sync", err, e.stats)
	}
	wantCalls(t, w, "full repair=false")
	if e.want != e.last || !e.last.Equal(r) || e.last == r {
		t.Fatal("after the full sync want and last are not the same copy of r")
	}
}

// Repair writes want in full, marked as a repair, and nothing before the
// first Apply; after success the next Apply is incremental again.
func TestEngineRepairWritesWantInFull(t *testing.T) {
	ctx := context.Background()
	var e syncEngine
	w := &fakeWriter{fam: IPv6}
	if err := e.repair(ctx, w); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, w)
	r := sample(IPv6, Options{})
	w.fail = errors.New("injected")
	if err := e.apply(ctx, w, r, false); err == nil {
		t.Fatal("the failed write was not returned")
	}
	wantCalls(t, w, "full repair=false")
	want := e.want
	if err := e.repair(ctx, w); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, w, "full repair=true")
	if w.full != want || !e.stats.Full || e.want != e.last || !e.last.Equal(r) {
		t.Fatalf("Repair wrote %p (want %p), stats %+v, want==last %v", w.full, want, e.stats, e.want == e.last)
	}
	r.Add(VirtualServers, AddrPort(mustAddr("2001:db8::9"), UDP, 53))
	if err := e.apply(ctx, w, r, false); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, w, "deltas")
}

// Nothing reaches the writer when the family, the ruleset, the back end's
// limits or ctx refuse the Apply; an ApplyFull or a change of Options is a
// full sync.
func TestEngineRefusesBeforeWriting(t *testing.T) {
	ctx := context.Background()
	e, w, r := synced(t)
	last := e.last
	bad := r.Clone()
	bad.Add(VirtualServers, AddrPort(mustAddr("2001:db8::1"), TCP, 80))
	done, cancel := context.WithCancel(ctx)
	cancel()
	limit := &ValidationError{Field: "ClusterIP", Value: "many", Reason: "too many"}
	for _, c := range []struct {
		name  string
		ctx   context.Context
		r     *Ruleset
		limit error
		field string
	}{
		{"family", ctx, sample(IPv6, Options{}), nil, "Family"},
		{"member", ctx, bad, nil, "virtual-servers[2001:db8::1,tcp:80].Addr"},
		{"limits", ctx, r, limit, "ClusterIP"},
		{"ctx", done, r, nil, ""},
	} {
		w.limit = c.limit
		err := e.apply(c.ctx, w, c.r, false)
		var ve *ValidationError
		switch {
		case c.field == "" && !errors.Is(err, context.Canceled):
			t.Errorf("%s: %v, want context.Canceled", c.name, err)
		case c.field != "" && (!errors.As(err, &ve) || ve.Field != c.field):
			t.Errorf("%s: %v, want a *ValidationError of field %s", c.name, err, c.field)
		}
		wantCalls(t, w)
		if e.last != last || e.want != last {
			t.Errorf("%s: the refused Apply changed last or want", c.name)
		}
	}
	w.limit = nil
	if err := e.apply(ctx, w, r, true); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, w, "full repair=false")
	r.Options.MasqueradeAll = true
	if err := e.apply(ctx, w, r, false); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, w, "full repair=false")
}

// The other back end's objects are removed once, after the first full sync
// that was written; a failure of that is returned, keeps the ruleset
// written and makes the next Apply full, which retries.
func TestEngineCleansUpTheOtherBackEndOnce(t *testing.T) {
	ctx := context.Background()
	w := &fakeWriter{fam: IPv4}
	var cleanups []string // the writer's calls when each cleanup ran
	fail := errors.New("injected: busy")
	e := syncEngine{cleanupOther: func(context.Context) error {
		cleanups = append(cleanups, strings.Join(w.calls, ","))
		if len(cleanups) == 1 {
			return fail
		}
		return nil
	}}
	r := sample(IPv4, Options{})
	if err := e.apply(ctx, w, r, false); !errors.Is(err, fail) || !strings.Contains(err.Error(), "nftables back end") {
		t.Fatalf("Apply: %v, want the cleanup's failure naming the other back end", err)
	}
	if !e.want.Equal(r) || e.last != nil {
		t.Fatal("after the failed cleanup want is not r or last is not nil")
	}
	r.Add(IPVSIPs, Addr(mustAddr("198.18.0.10")))
	for range 3 {
		if err := e.apply(ctx, w, r, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.apply(ctx, w, r, true); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, w, "full repair=false", "full repair=false", "deltas", "deltas", "full repair=false")
	if !slices.Equal(cleanups, []string{"full repair=false", "full repair=false,full repair=false"}) {
		t.Fatalf("cleanups ran after %q: want twice, each after a full write", cleanups)
	}
}

// Owned merges the other back end's ledger until its objects are removed;
// Check compares with want only; Cleanup forgets, except when ctx is done.
func TestEngineOwnedCheckCleanup(t *testing.T) {
	ctx := context.Background()
	a, b := AddrPort(mustAddr("198.18.0.1"), TCP, 80), AddrPort(mustAddr("198.18.0.2"), TCP, 80)
	w := &fakeWriter{fam: IPv4, ledger: NewRuleset(IPv4, Options{})}
	w.ledger.Add(VirtualServers, a)
	other := NewRuleset(IPv4, Options{})
	other.Add(VirtualServers, b)
	e := syncEngine{
		ownedOther:   func(context.Context) (*Ruleset, error) { return other, nil },
		cleanupOther: func(context.Context) error { return nil },
	}
	got, err := e.owned(ctx, w)
	if err != nil || !got.Has(VirtualServers, a) || !got.Has(VirtualServers, b) {
		t.Fatalf("Owned before the first sync: %v, %v: want both ledgers", got, err)
	}
	if ds, err := e.check(ctx, w); ds != nil || err != nil {
		t.Fatalf("Check before the first sync: %v, %v", ds, err)
	}
	wantCalls(t, w)
	r := sample(IPv4, Options{})
	if err := e.apply(ctx, w, r, false); err != nil {
		t.Fatal(err)
	}
	if got, err := e.owned(ctx, w); err != nil || got != w.ledger {
		t.Fatalf("Owned after the other's cleanup: %v, %v: want the own ledger only", got, err)
	}
	if _, err := e.check(ctx, w); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, w, "full repair=false", "drift")
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := e.cleanup(done, w); !errors.Is(err, context.Canceled) || e.want == nil {
		t.Fatalf("Cleanup with a done ctx: %v, want %v: want the ctx error, nothing forgotten", err, e.want)
	}
	if err := e.cleanup(ctx, w); err != nil || e.want != nil || e.last != nil {
		t.Fatalf("Cleanup: %v, want %v, last %v: want both forgotten", err, e.want, e.last)
	}
	wantCalls(t, w, "remove")
}
