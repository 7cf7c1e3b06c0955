// Package contract holds the expectations that ipset.Client (against a
// kernel) and ipsettest.Fake (in memory) must both meet, so that the fake
// keeps the kernel's semantics and errors.
package contract

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/ipset"
)

// Sets is the method set both implementations share.
type Sets interface {
	Create(ctx context.Context, s ipset.Set) error
	Ensure(ctx context.Context, s ipset.Set) error
	Destroy(ctx context.Context, name string) error
	Flush(ctx context.Context, name string) error
	Rename(ctx context.Context, from, to string) error
	Swap(ctx context.Context, a, b string) error
	Header(ctx context.Context, name string) (ipset.SetInfo, error)
	List(ctx context.Context, name string) (ipset.SetInfo, error)
	ListAll(ctx context.Context, headersOnly bool) ([]ipset.SetInfo, error)
	Add(ctx context.Context, name string, entries ...ipset.Entry) error
	AddStrict(ctx context.Context, name string, entries ...ipset.Entry) error
	Del(ctx context.Context, name string, entries ...ipset.Entry) error
	DelStrict(ctx context.Context, name string, entries ...ipset.Entry) error
	Update(ctx context.Context, changes ...ipset.Change) error
	Test(ctx context.Context, name string, e ipset.Entry) (bool, error)
	Replace(ctx context.Context, s ipset.Set, entries []ipset.Entry) error
}

// World is one fresh, empty place (a network namespace, a fake) with an
// implementation working in it, and ways for a test to do what other
// programs do there.
type World struct {
	Sets Sets
	// Foreign makes set s with entries as another program would (with
	// ipset(8) for the kernel).
	Foreign func(t *testing.T, s ipset.Set, entries ...ipset.Entry)
	// Reference makes another program refer to set name (a netfilter rule
	// for the kernel) until the function it returns is called.
	Reference func(t *testing.T, name string) (release func(t *testing.T))
	// Oracle returns every set with its entries, in the order the kernel
	// lists them, read without Sets (ipset save, parsed, for the kernel).
	Oracle func(t *testing.T) []ipset.SetInfo
}

// theirs is another program's set, present in every world from the start
// and checked untouched at the end of every expectation.
var theirs = ipset.Set{Name: "KUBE-CLUSTER-IP", Type: ipset.HashIPPort}

// Run runs every expectation as a subtest, each in a world from newWorld.
func Run(t *testing.T, newWorld func(t *testing.T) World) {
	for _, tc := range []struct {
		name string
		f    func(t *testing.T, w World)
	}{
		{"CreateEnsureAndTheirErrors", create},
		{"AddDelStrictAndFull", addDel},
		{"RenameSwapFlushDestroy", renameSwap},
		{"ReferencedSetIsInUse", referenced},
		{"ReplaceIsAllOrNothing", replace},
		{"UpdateValidatesFirstThenAddsAndDeletes", update},
		{"CanceledContextChangesNothing", canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			theirEntries := []ipset.Entry{ep("198.18.9.1", 80), ep("198.18.9.2", 443)}
			w.Foreign(t, theirs, theirEntries...)
			before := setOf(t, w, theirs.Name)
			tc.f(t, w)
			if after := setOf(t, w, theirs.Name); after == nil || !sameInfo(*before, *after) {
				t.Errorf("another program's set changed: before %+v, after %+v", before, after)
			}
		})
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func ep(ip string, port uint16) ipset.Entry {
	return ipset.Entry{IP: netip.MustParseAddr(ip), Proto: ipset.TCP, Port: port}
}

// setOf returns set name as the oracle shows it, or nil.
func setOf(t *testing.T, w World, name string) *ipset.SetInfo {
	t.Helper()
	for _, s := range w.Oracle(t) {
		if s.Name == name {
			return &s
		}
	}
	return nil
}

// ours returns the names of the sets the oracle shows, but theirs.
func ours(t *testing.T, w World) []string {
	t.Helper()
	var out []string
	for _, s := range w.Oracle(t) {
		if s.Name != theirs.Name {
			out = append(out, s.Name)
		}
	}
	return out
}

// sameInfo compares header fields and entries, ignoring entry order (the
// kernel lists a hash set in hash order).
func sameInfo(a, b ipset.SetInfo) bool {
	sorted := func(es []ipset.Entry) []string {
		out := make([]string, len(es))
		for i, e := range es {
			out[i] = e.String()
		}
		slices.Sort(out)
		return out
	}
	return a.Set == b.Set && slices.Equal(sorted(a.Entries), sorted(b.Entries))
}

// wantEntries fails t unless the oracle shows set name holding exactly es.
func wantEntries(t *testing.T, w World, name string, es ...ipset.Entry) {
	t.Helper()
	got := setOf(t, w, name)
	if got == nil {
		t.Fatalf("set %s is missing", name)
	}
	if want := (ipset.SetInfo{Set: got.Set, Entries: es}); !sameInfo(want, *got) {
		t.Fatalf("set %s holds %v; want %v", name, got.Entries, es)
	}
}
