package contract

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/iptables"
)

// nothingYet: before the first Apply there is nothing owned, nothing to
// compare, nothing to repair, and Cleanup finds nothing to remove.
func nothingYet(t *testing.T, w World) {
	ctx := testCtx(t)
	if r, err := w.Backend.Owned(ctx); r != nil || err != nil {
		t.Fatalf("Owned before any Apply = %v, %v; want nil, nil", r, err)
	}
	wantNoDrift(t, w, "before any Apply")
	if err := w.Backend.Repair(ctx); err != nil {
		t.Fatalf("Repair before any Apply: %v", err)
	}
	if err := w.Backend.Cleanup(ctx); err != nil {
		t.Fatalf("Cleanup with nothing to remove: %v", err)
	}
	w.Holds(t, nil)
}

// applyThenOwned: an Apply writes everything once; Owned reads the ledger
// back; the same ruleset again sends nothing.
func applyThenOwned(t *testing.T, w World) {
	ctx := testCtx(t)
	r := sample(w.Family)
	if err := w.Backend.Apply(ctx, r); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	w.Holds(t, r)
	st := w.Backend.LastStats()
	if !st.Full || st.ElementsAdded != members(r) || st.ElementsDeleted != 0 || st.SetsReplaced == 0 || st.RuleWrites == 0 {
		t.Errorf("first Apply's stats = %+v; want a full sync adding all %d members", st, members(r))
	}
	wantOwned(t, w, r)
	wantNoDrift(t, w, "after Apply")

	if err := w.Backend.Apply(ctx, r.Clone()); err != nil {
		t.Fatalf("Apply of the same ruleset: %v", err)
	}
	if st := w.Backend.LastStats(); st.Full || st.ElementsAdded+st.ElementsDeleted+st.SetsReplaced+st.RuleWrites != 0 {
		t.Errorf("Apply with no change sent something: %+v", st)
	}
	w.Holds(t, r)
}

// incremental: a changed ruleset is applied as its difference, an Options
// change and ApplyFull rewrite everything.
func incremental(t *testing.T, w World) {
	ctx := testCtx(t)
	r := sample(w.Family)
	if err := w.Backend.Apply(ctx, r); err != nil {
		t.Fatal(err)
	}
	next := r.Clone()
	vs := iptables.AddrPort(addr(w.Family, 9), iptables.TCP, 8443)
	next.Add(iptables.ClusterIPSet, vs)
	next.Add(iptables.VirtualServers, vs)
	next.Remove(iptables.ClusterIPSet, iptables.AddrPort(addr(w.Family, 1), iptables.UDP, 53))
	if err := w.Backend.Apply(ctx, next); err != nil {
		t.Fatalf("incremental Apply: %v", err)
	}
	w.Holds(t, next)
	// No set turned empty or non-empty, so no rule changed.
	if st := w.Backend.LastStats(); st.Full || st.ElementsAdded != 2 || st.ElementsDeleted != 1 || st.SetsReplaced != 0 || st.RuleWrites != 0 {
		t.Errorf("incremental Apply's stats = %+v; want 2 added, 1 deleted, nothing else", st)
	}
	wantOwned(t, w, next)
	wantNoDrift(t, w, "after an incremental Apply")

	opts := next.Clone()
	opts.Options.MasqueradeAll = true
	if err := w.Backend.Apply(ctx, opts); err != nil {
		t.Fatalf("Apply with other Options: %v", err)
	}
	w.Holds(t, opts)
	if st := w.Backend.LastStats(); !st.Full {
		t.Errorf("Apply with other Options was not a full sync: %+v", st)
	}
	if err := w.Backend.ApplyFull(ctx, opts); err != nil {
		t.Fatalf("ApplyFull: %v", err)
	}
	if st := w.Backend.LastStats(); !st.Full || st.ElementsAdded != members(opts) {
		t.Errorf("ApplyFull's stats = %+v; want a full sync of %d members", st, members(opts))
	}
	w.Holds(t, opts)
	wantNoDrift(t, w, "after ApplyFull")
}

// invalid: a Ruleset that fails validation gets a *ValidationError naming
// field and value, from Apply, ApplyFull and Render alike, and changes
// nothing, whether or not something was applied before.
func invalid(t *testing.T, w World) {
	ctx := testCtx(t)
	other := iptables.IPv6
	if w.Family == iptables.IPv6 {
		other = iptables.IPv4
	}
	badPort := sample(w.Family)
	badPort.Add(iptables.ClusterIPSet, iptables.AddrPort(addr(w.Family, 7), iptables.TCP, 0))
	badFamily := sample(w.Family)
	badFamily.Add(iptables.IPVSIPs, iptables.Addr(addr(other, 7)))
	badMark := sample(w.Family)
	badMark.Options.MasqueradeMark = 0x3
	cases := []struct {
		name         string
		r            *iptables.Ruleset
		field, value string
	}{
		{"port 0", badPort, ".Port", "0"},
		{"address of the other family", badFamily, ".Addr", addr(other, 7).String()},
		{"mark of two bits", badMark, "Options.MasqueradeMark", "0x3"},
		{"ruleset of the other family", sample(other), "Family", other.String()},
	}
	refused := func(good *iptables.Ruleset) {
		t.Helper()
		for _, c := range cases {
			for _, apply := range []func(context.Context, *iptables.Ruleset) error{w.Backend.Apply, w.Backend.ApplyFull} {
				err := apply(ctx, c.r)
				var ve *iptables.ValidationError
				if !errors.As(err, &ve) || !strings.HasSuffix(ve.Field, c.field) || ve.Value != c.value {
					t.Errorf("Apply of a ruleset with a %s: %v; want a *ValidationError for %s %q", c.name, err, c.field, c.value)
				}
				if st := w.Backend.LastStats(); st != (iptables.ApplyStats{}) {
					t.Errorf("a refused Apply counts what it sent: %+v", st)
				}
			}
			w.Holds(t, good)
		}
	}
	refused(nil)
	if r, err := w.Backend.Owned(ctx); r != nil || err != nil {
		t.Fatalf("Owned after refused Applies = %v, %v; want nil, nil", r, err)
	}
	good := sample(w.Family)
	if err := w.Backend.Apply(ctx, good); err != nil {
		t.Fatal(err)
	}
	refused(good)
	wantNoDrift(t, w, "after refused Applies")
	var ve *iptables.ValidationError
	if _, err := w.Backend.Render(badPort); !errors.As(err, &ve) {
		t.Errorf("Render of a ruleset with port 0: %v; want a *ValidationError", err)
	}
	if s, err := w.Backend.Render(good); err != nil || s == "" {
		t.Errorf("Render = %q, %v; want the ruleset's text", s, err)
	}
}

// driftRepair: a member deleted by someone else is reported by Check (which
// changes nothing), and Repair puts it back.
func driftRepair(t *testing.T, w World) {
	ctx := testCtx(t)
	r := sample(w.Family)
	if err := w.Backend.Apply(ctx, r); err != nil {
		t.Fatal(err)
	}
	gone := iptables.AddrPort(addr(w.Family, 1), iptables.TCP, 80)
	w.DropMember(t, iptables.ClusterIPSet, gone)
	for range 2 { // the second time: Check changed nothing
		ds, err := w.Backend.Check(ctx)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if !slices.ContainsFunc(ds, func(d iptables.ObjectDrift) bool {
			return d.Missing == 1 && d.Extra == 0 && d.Object != "" && strings.Contains(d.Problem, "missing")
		}) {
			t.Fatalf("Check after a member was deleted = %v; want a Drift with 1 missing", ds)
		}
	}
	if err := w.Backend.Repair(ctx); err != nil {
		t.Fatalf("Repair: %v", err)
	}
	if st := w.Backend.LastStats(); !st.Full {
		t.Errorf("Repair's stats = %+v; want a full rewrite", st)
	}
	w.Holds(t, r)
	wantNoDrift(t, w, "after Repair")
	// The back end still diffs against what it applied.
	r.Remove(iptables.NodePortUDP, iptables.Port(30053))
	r.Add(iptables.NodePortUDP, iptables.Port(30054))
	if err := w.Backend.Apply(ctx, r); err != nil {
		t.Fatal(err)
	}
	w.Holds(t, r)
}

// cleanup: Cleanup removes every object the back end made and nothing of
// anyone else's (Run checks theirs); the back end starts over afterwards.
func cleanup(t *testing.T, w World) {
	ctx := testCtx(t)
	r := sample(w.Family)
	if err := w.Backend.Apply(ctx, r); err != nil {
		t.Fatalf("Apply beside other programs' objects: %v", err)
	}
	w.Holds(t, r)
	if err := w.Backend.Cleanup(ctx); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	w.Holds(t, nil)
	if got, err := w.Backend.Owned(ctx); got != nil || err != nil {
		t.Fatalf("Owned after Cleanup = %v, %v; want nil, nil", got, err)
	}
	wantNoDrift(t, w, "after Cleanup")
	if err := w.Backend.Repair(ctx); err != nil {
		t.Fatalf("Repair after Cleanup: %v", err)
	}
	w.Holds(t, nil)
	if err := w.Backend.Cleanup(ctx); err != nil {
		t.Fatalf("second Cleanup: %v", err)
	}
	if err := w.Backend.Apply(ctx, r); err != nil {
		t.Fatalf("Apply after Cleanup: %v", err)
	}
	if st := w.Backend.LastStats(); !st.Full {
		t.Errorf("the first Apply after Cleanup was not a full sync: %+v", st)
	}
	w.Holds(t, r)
	if err := w.Backend.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
}

// squatted: an object of the back end's names without its mark is
// another program's: Apply, Owned and Cleanup refuse with a *ForeignError
// matching fs.ErrExist and leave it as it is.
func squatted(t *testing.T, w World) {
	ctx := testCtx(t)
	untouched := w.Squat(t)
	isForeign := func(op string, err error) {
		t.Helper()
		var fe *iptables.ForeignError
		if !errors.As(err, &fe) || !errors.Is(err, fs.ErrExist) || fe.Kind == "" || fe.Name == "" {
			t.Errorf("%s beside a foreign object of its names: %v; want a *ForeignError matching fs.ErrExist", op, err)
		}
	}
	isForeign("Apply", w.Backend.Apply(ctx, sample(w.Family)))
	untouched(t)
	_, err := w.Backend.Owned(ctx)
	isForeign("Owned", err)
	isForeign("Cleanup", w.Backend.Cleanup(ctx))
	untouched(t)
}

// canceled: a canceled context stops Apply before it changes anything.
func canceled(t *testing.T, w World) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := sample(w.Family)
	if err := w.Backend.Apply(ctx, r); !errors.Is(err, context.Canceled) {
		t.Errorf("Apply with a canceled context: %v; want context.Canceled", err)
	}
	w.Holds(t, nil)
	if err := w.Backend.Apply(testCtx(t), r); err != nil {
		t.Fatal(err)
	}
	next := r.Clone()
	next.Add(iptables.NodePortTCP, iptables.Port(30099))
	if err := w.Backend.Apply(ctx, next); !errors.Is(err, context.Canceled) {
		t.Errorf("incremental Apply with a canceled context: %v; want context.Canceled", err)
	}
	if err := w.Backend.Repair(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Repair with a canceled context: %v; want context.Canceled", err)
	}
	w.Holds(t, r)
}

func wantNoDrift(t *testing.T, w World, when string) {
	t.Helper()
	if ds, err := w.Backend.Check(testCtx(t)); len(ds) != 0 || err != nil {
		t.Fatalf("Check %s = %v, %v; want no drift", when, ds, err)
	}
}

// wantOwned checks that Owned returns r's ledger sets and nothing else.
func wantOwned(t *testing.T, w World, r *iptables.Ruleset) {
	t.Helper()
	got, err := w.Backend.Owned(testCtx(t))
	if err != nil || got == nil {
		t.Fatalf("Owned = %v, %v; want the ledger", got, err)
	}
	for _, s := range iptables.Sets() {
		var want []iptables.Member
		if s == iptables.VirtualServers || s == iptables.IPVSIPs {
			want = r.Members(s)
		}
		if g := got.Members(s); !slices.Equal(g, want) {
			t.Errorf("Owned's %v = %v; want %v", s, g, want)
		}
	}
}
