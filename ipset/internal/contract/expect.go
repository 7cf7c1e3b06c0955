package contract

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"testing"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/ipset"
)

func create(t *testing.T, w World) {
	ctx := testCtx(t)
	a := ipset.Set{Name: "a", Type: ipset.HashIPPort, MaxElem: 2}
	if err := w.Sets.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := w.Sets.Create(ctx, a); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create of an existing set: %v; want fs.ErrExist", err)
	}
	if err := w.Sets.Ensure(ctx, a); err != nil {
		t.Errorf("Ensure of the same set: %v", err)
	}
	if err := w.Sets.Ensure(ctx, ipset.Set{Name: "a", Type: ipset.HashIP}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Ensure with another type: %v; want fs.ErrExist", err)
	}
	if err := w.Sets.Ensure(ctx, theirs); err != nil {
		t.Errorf("Ensure of another program's set as it is: %v", err)
	}
	var ie *ipset.Error
	if _, err := w.Sets.Header(ctx, "nope"); !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &ie) || ie.Set != "nope" {
		t.Errorf("Header of a missing set: %v; want an *ipset.Error for nope matching fs.ErrNotExist", err)
	}
	if err := w.Sets.Add(ctx, "nope", ipset.Entry{IP: ep("198.18.0.1", 1).IP}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Add to a missing set: %v; want fs.ErrNotExist", err)
	}
	var ve *ipset.ValidationError
	if err := w.Sets.Create(ctx, ipset.Set{Name: "a-name-longer-than-31-bytes-xxxx", Type: ipset.HashIP}); !errors.As(err, &ve) || ve.Field != "Name" {
		t.Errorf("Create with a 32-byte name: %v; want a *ValidationError for Name", err)
	}
	h, err := w.Sets.Header(ctx, "a")
	if err != nil || h.Type != ipset.HashIPPort || h.MaxElem != 2 || h.Family != inet.IPv4 || h.HashSize == 0 || h.Elements != 0 {
		t.Errorf("Header(a) = %+v, %v; want an empty inet hash:ip,port of maxelem 2", h, err)
	}
	if got := setOf(t, w, "a"); got == nil || got.Set != h.Set {
		t.Errorf("the oracle shows %+v; Header said %+v", got, h.Set)
	}
	if got := ours(t, w); !slices.Equal(got, []string{"a"}) {
		t.Errorf("sets = %v; want [a]", got)
	}
}

func addDel(t *testing.T, w World) {
	ctx := testCtx(t)
	if err := w.Sets.Create(ctx, ipset.Set{Name: "a", Type: ipset.HashIPPort, MaxElem: 2}); err != nil {
		t.Fatal(err)
	}
	e1, e2, e3 := ep("198.18.0.1", 1), ep("198.18.0.2", 2), ep("198.18.0.3", 3)
	if err := w.Sets.Add(ctx, "a", e1, e1); err != nil {
		t.Fatalf("idempotent Add: %v", err)
	}
	err := w.Sets.AddStrict(ctx, "a", e1, e2)
	var ie *ipset.Error
	if !errors.Is(err, ipset.ErrElementExists) || !errors.Is(err, fs.ErrExist) || !errors.As(err, &ie) || ie.Entry != "198.18.0.1,tcp:1" {
		t.Errorf("AddStrict of a member: %v; want ErrElementExists naming 198.18.0.1,tcp:1", err)
	}
	// e2 went in despite e1's failure; the set (maxelem 2) is now full.
	wantEntries(t, w, "a", e1, e2)
	if err := w.Sets.Add(ctx, "a", e3); !errors.Is(err, ipset.ErrSetFull) || !errors.As(err, &ie) || ie.Entry != "198.18.0.3,tcp:3" {
		t.Errorf("Add to a full set: %v; want ErrSetFull naming the entry", err)
	}
	var ve *ipset.ValidationError
	if err := w.Sets.Add(ctx, "a", e3, ipset.Entry{IP: e3.IP, Port: 9}); !errors.As(err, &ve) || ve.Field != "entries[1].Proto" {
		t.Errorf("Add without a protocol: %v; want a *ValidationError for entries[1].Proto", err)
	}
	if err := w.Sets.Add(ctx, "a", ep("2001:db8::1", 1)); !errors.As(err, &ve) || ve.Field != "entries[0].IP" {
		t.Errorf("Add of an IPv6 entry to an IPv4 set: %v; want a *ValidationError for entries[0].IP", err)
	}
	wantEntries(t, w, "a", e1, e2)
	if ok, err := w.Sets.Test(ctx, "a", e2); !ok || err != nil {
		t.Errorf("Test of a member = %v, %v", ok, err)
	}
	if ok, err := w.Sets.Test(ctx, "a", e3); ok || err != nil {
		t.Errorf("Test of a non-member = %v, %v", ok, err)
	}
	if err := w.Sets.Del(ctx, "a", e3, e2); err != nil {
		t.Errorf("idempotent Del: %v", err)
	}
	if err := w.Sets.DelStrict(ctx, "a", e2); !errors.Is(err, ipset.ErrElementMissing) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("DelStrict of a non-member: %v; want ErrElementMissing", err)
	}
	wantEntries(t, w, "a", e1)
	l, err := w.Sets.List(ctx, "a")
	if err != nil || len(l.Entries) != 1 || l.Entries[0] != e1 || l.Elements != 1 {
		t.Errorf("List(a) = %+v, %v; want the one entry %v", l, err, e1)
	}
}

func renameSwap(t *testing.T, w World) {
	ctx := testCtx(t)
	e1, e3 := ep("198.18.0.1", 1), ep("198.18.0.3", 3)
	for _, s := range []struct {
		set ipset.Set
		e   ipset.Entry
	}{{ipset.Set{Name: "a", Type: ipset.HashIPPort, MaxElem: 2}, e1}, {ipset.Set{Name: "b", Type: ipset.HashIPPort}, e3}} {
		if err := w.Sets.Create(ctx, s.set); err != nil {
			t.Fatal(err)
		}
		if err := w.Sets.Add(ctx, s.set.Name, s.e); err != nil {
			t.Fatal(err)
		}
	}
	for _, to := range []string{"a", theirs.Name} {
		if err := w.Sets.Rename(ctx, "b", to); !errors.Is(err, ipset.ErrSetExists) || !errors.Is(err, fs.ErrExist) {
			t.Errorf("Rename onto the taken name %s: %v; want ErrSetExists", to, err)
		}
	}
	if err := w.Sets.Rename(ctx, "b", "c"); err != nil {
		t.Fatal(err)
	}
	if err := w.Sets.Swap(ctx, "a", "c"); err != nil {
		t.Fatal(err)
	}
	if got := ours(t, w); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("sets after rename b->c and swap a<->c = %v; want [a c]", got)
	}
	wantEntries(t, w, "a", e3)
	wantEntries(t, w, "c", e1)
	if c := setOf(t, w, "c"); c.MaxElem != 2 {
		t.Errorf("after the swap, c has maxelem %d; want 2 (a's)", c.MaxElem)
	}
	for _, s := range []ipset.Set{{Name: "d", Type: ipset.HashIP}, {Name: "d6", Type: ipset.HashIPPort, Family: inet.IPv6}} {
		if err := w.Sets.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := w.Sets.Swap(ctx, "a", s.Name); !errors.Is(err, ipset.ErrTypeMismatch) {
			t.Errorf("Swap with %s: %v; want ErrTypeMismatch", s.Name, err)
		}
	}
	if err := w.Sets.Flush(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	wantEntries(t, w, "a")
	for _, n := range []string{"a", "c", "d", "d6"} {
		if err := w.Sets.Destroy(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sets.Destroy(ctx, "a"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Destroy of a missing set: %v; want fs.ErrNotExist", err)
	}
	if err := w.Sets.Swap(ctx, "x", "y"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Swap of missing sets: %v; want fs.ErrNotExist", err)
	}
	if got := ours(t, w); len(got) != 0 {
		t.Errorf("sets left: %v", got)
	}
}

// referenced: a set another program refers to cannot be destroyed or
// renamed, but Replace (which swaps) changes its members in place.
func referenced(t *testing.T, w World) {
	ctx := testCtx(t)
	s := ipset.Set{Name: "a", Type: ipset.HashIPPort}
	if err := w.Sets.Replace(ctx, s, []ipset.Entry{ep("198.18.0.1", 1)}); err != nil {
		t.Fatal(err)
	}
	release := w.Reference(t, "a")
	if h, err := w.Sets.Header(ctx, "a"); err != nil || h.References != 1 {
		t.Errorf("Header of a set referred to once = %+v, %v; want References 1", h, err)
	}
	if err := w.Sets.Destroy(ctx, "a"); !errors.Is(err, ipset.ErrInUse) {
		t.Errorf("Destroy of a referenced set: %v; want ErrInUse", err)
	}
	if err := w.Sets.Rename(ctx, "a", "b"); !errors.Is(err, ipset.ErrInUse) {
		t.Errorf("Rename of a referenced set: %v; want ErrInUse", err)
	}
	next := []ipset.Entry{ep("198.18.0.2", 2), ep("198.18.0.3", 3)}
	if err := w.Sets.Replace(ctx, s, next); err != nil {
		t.Fatalf("Replace of a referenced set: %v", err)
	}
	wantEntries(t, w, "a", next...)
	if h, err := w.Sets.Header(ctx, "a"); err != nil || h.References != 1 {
		t.Errorf("Header after Replace = %+v, %v; want References 1 still", h, err)
	}
	release(t)
	if err := w.Sets.Destroy(ctx, "a"); err != nil {
		t.Errorf("Destroy after the reference went: %v", err)
	}
	if got := ours(t, w); len(got) != 0 {
		t.Errorf("sets left: %v", got)
	}
}

// replace: Replace validates everything before it changes anything, and
// leaves no temporary set behind.
func replace(t *testing.T, w World) {
	ctx := testCtx(t)
	s := ipset.Set{Name: "a", Type: ipset.HashIPPort, MaxElem: 2}
	first := []ipset.Entry{ep("198.18.0.1", 1), ep("198.18.0.1", 1)}
	if err := w.Sets.Replace(ctx, s, first); err != nil {
		t.Fatalf("Replace creating the set: %v", err)
	}
	wantEntries(t, w, "a", first[0])
	var ve *ipset.ValidationError
	three := []ipset.Entry{ep("198.18.0.1", 1), ep("198.18.0.2", 2), ep("198.18.0.3", 3)}
	if err := w.Sets.Replace(ctx, s, three); !errors.As(err, &ve) || ve.Field != "entries" {
		t.Errorf("Replace beyond maxelem: %v; want a *ValidationError for entries", err)
	}
	if err := w.Sets.Replace(ctx, s, []ipset.Entry{ep("198.18.0.2", 2), {IP: first[0].IP, Port: 9}}); !errors.As(err, &ve) || ve.Field != "entries[1].Proto" {
		t.Errorf("Replace with a port without protocol: %v; want a *ValidationError for entries[1].Proto", err)
	}
	if err := w.Sets.Replace(ctx, ipset.Set{Name: "a", Type: ipset.HashIP}, nil); !errors.Is(err, ipset.ErrTypeMismatch) {
		t.Errorf("Replace with another type: %v; want ErrTypeMismatch", err)
	}
	wantEntries(t, w, "a", first[0])
	if err := w.Sets.Replace(ctx, s, nil); err != nil {
		t.Fatal(err)
	}
	wantEntries(t, w, "a")
	if got := ours(t, w); !slices.Equal(got, []string{"a"}) {
		t.Errorf("sets after Replace = %v; want [a] (no temporary set left)", got)
	}
}

func update(t *testing.T, w World) {
	ctx := testCtx(t)
	a := ipset.Set{Name: "a", Type: ipset.HashIPPort}
	b := ipset.Set{Name: "b", Type: ipset.HashIP}
	for _, s := range []ipset.Set{a, b} {
		if err := w.Sets.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	e1, e2 := ep("198.18.0.1", 1), ep("198.18.0.2", 2)
	ip := ipset.Entry{IP: e1.IP}
	if err := w.Sets.Add(ctx, "a", e1); err != nil {
		t.Fatal(err)
	}
	var ve *ipset.ValidationError
	err := w.Sets.Update(ctx, ipset.Change{Set: a, Add: []ipset.Entry{e2}}, ipset.Change{Set: b, Add: []ipset.Entry{e1}})
	if !errors.As(err, &ve) || ve.Field != "changes[1].add[0].Proto" {
		t.Errorf("Update with a port in a hash:ip set: %v; want a *ValidationError for changes[1].add[0].Proto", err)
	}
	wantEntries(t, w, "a", e1)
	if err := w.Sets.Update(ctx, ipset.Change{Set: ipset.Set{Name: "nope", Type: ipset.HashIP}, Add: []ipset.Entry{ip}}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Update of a missing set: %v; want fs.ErrNotExist", err)
	}
	// Additions come before deletions: an entry both added and deleted
	// ends up absent; present adds and absent deletes are not errors.
	err = w.Sets.Update(ctx,
		ipset.Change{Set: a, Add: []ipset.Entry{e1, e2}, Del: []ipset.Entry{e1, ep("198.18.0.9", 9)}},
		ipset.Change{Set: b, Add: []ipset.Entry{ip}})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	wantEntries(t, w, "a", e2)
	wantEntries(t, w, "b", ip)
}

// canceled: a call with a canceled context fails with its error and
// changes nothing.
func canceled(t *testing.T, w World) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := ipset.Set{Name: "a", Type: ipset.HashIPPort}
	if err := w.Sets.Create(ctx, s); !errors.Is(err, context.Canceled) {
		t.Errorf("Create with a canceled context: %v; want context.Canceled", err)
	}
	if err := w.Sets.Replace(ctx, s, []ipset.Entry{ep("198.18.0.1", 1)}); !errors.Is(err, context.Canceled) {
		t.Errorf("Replace with a canceled context: %v; want context.Canceled", err)
	}
	if err := w.Sets.Add(ctx, theirs.Name, ep("198.18.0.1", 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("Add with a canceled context: %v; want context.Canceled", err)
	}
	if err := w.Sets.Destroy(ctx, theirs.Name); !errors.Is(err, context.Canceled) {
		t.Errorf("Destroy with a canceled context: %v; want context.Canceled", err)
	}
	if got := ours(t, w); len(got) != 0 {
		t.Errorf("sets made with a canceled context: %v", got)
	}
}
