package iptables

import (
	"context"
	"fmt"
)

// syncEngine is the bookkeeping both back ends share: what the kernel holds
// and should hold, the choice between a full and an incremental sync, the
// checks made before anything is written, the statistics, and the removal
// of the other back end's objects after the first full sync. A back end
// embeds it and passes itself, as the syncWriter, to every verb; the
// writer only writes.
type syncEngine struct {
	// last is what the kernel holds, as far as the back end knows; nil
	// forces a full sync.
	last     *Ruleset
	lastMark journalMark // of the caller's Ruleset, when last was applied
	// want is what the kernel should hold: the ruleset of the last
	// Apply, even one that failed (Check compares with it, Repair writes
	// it); nil before the first Apply and after Cleanup.
	want *Ruleset
	// stats are the last Apply's or Repair's; the writers add to them.
	stats ApplyStats
	// cleanedOther records that the other back end's objects of the same
	// instance were removed (done once, after the first full sync that
	// succeeded).
	cleanedOther bool
	// cleanupOther removes the other back end's objects; nil skips it.
	cleanupOther func(ctx context.Context) error
	// ownedOther reads the other back end's ledger (Owned, until
	// cleanedOther); nil skips it.
	ownedOther func(ctx context.Context) (*Ruleset, error)
}

// syncWriter is what is particular to one back end: how it writes, reads
// back and removes its own objects. The engine calls a write only after
// the family, the ruleset, the limits and ctx were checked, and any method
// only with ctx not yet done.
type syncWriter interface {
	// kind names the back end in errors: "iptables" or "nftables".
	kind() string
	// family is the family of the rulesets the back end applies.
	family() Family
	// limits refuses, with a *ValidationError, a valid ruleset the back
	// end cannot hold.
	limits(r *Ruleset) error
	// writeFull writes all of r. repair is set for Repair, which also
	// restores what a sync takes as already there.
	writeFull(ctx context.Context, r *Ruleset, repair bool) error
	// writeDeltas writes d, the change from old (what the kernel holds)
	// to r.
	writeDeltas(ctx context.Context, old, r *Ruleset, d *setDeltas) error
	// drift reads the kernel back and compares it with r.
	drift(ctx context.Context, r *Ruleset) ([]ObjectDrift, error)
	// ownLedger reads the back end's own ledger (see Owned): nil if it owns
	// nothing.
	ownLedger(ctx context.Context) (*Ruleset, error)
	// removeOwn removes the back end's objects (see Cleanup).
	removeOwn(ctx context.Context) error
}

// otherKind names the back end that is not kind.
func otherKind(kind string) string {
	if kind == "iptables" {
		return "nftables"
	}
	return "iptables"
}

// apply is Apply (full false) and ApplyFull (full true). It writes only the
// set deltas when it knows what the kernel holds and the options are the
// same; it validates first (only the added members for deltas) and writes
// nothing if that fails.
func (e *syncEngine) apply(ctx context.Context, w syncWriter, r *Ruleset, full bool) error {
	e.stats = ApplyStats{}
	if f, own := r.family(), w.family(); f != own {
		return &ValidationError{Field: "Family", Value: f.String(), Reason: "this back end applies " + own.String()}
	}
	incremental := !full && e.last != nil && e.last.Options == r.Options
	var (
		err error
		d   setDeltas
	)
	if incremental {
		d = r.deltas(e.last, e.lastMark)
		err = r.validateAdds(&d)
	} else {
		err = r.Validate()
	}
	if err != nil {
		return err
	}
	if err := w.limits(r); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	e.stats.Full = !incremental
	if incremental {
		err = e.writeDeltas(ctx, w, r, &d)
	} else {
		err = e.writeFull(ctx, w, r, false)
	}
	e.remember(r, err)
	return err
}

// repair is Repair: want written in full.
func (e *syncEngine) repair(ctx context.Context, w syncWriter) error {
	if e.want == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	e.stats = ApplyStats{Full: true}
	r := e.want
	err := e.writeFull(ctx, w, r, true)
	e.remember(r, err)
	return err
}

// remember records what the kernel should now hold: the applied ruleset,
// or after a failure a copy of the one that was being applied.
func (e *syncEngine) remember(r *Ruleset, err error) {
	switch {
	case err == nil:
		e.want = e.last
	case r != e.want:
		e.want = r.Clone()
	}
}

// writeFull writes r in full; once that succeeded the first time, it
// removes the other back end's objects. If that removal fails, r stays
// written, the error is returned and the next sync, a full one, tries
// again.
func (e *syncEngine) writeFull(ctx context.Context, w syncWriter, r *Ruleset, repair bool) error {
	e.last = nil
	if err := w.writeFull(ctx, r, repair); err != nil {
		return err
	}
	if !e.cleanedOther && e.cleanupOther != nil {
		if err := e.cleanupOther(ctx); err != nil {
			return fmt.Errorf("%s: ruleset applied, but removing the %s back end's objects failed (retried on the next full sync): %w", w.kind(), otherKind(w.kind()), err)
		}
		e.cleanedOther = true
	}
	e.last, e.lastMark = r.Clone(), r.mark()
	return nil
}

// writeDeltas writes d and, once it is all in, brings last up to date
// without copying it; until then last is nil, so a failure makes the next
// sync a full one.
func (e *syncEngine) writeDeltas(ctx context.Context, w syncWriter, r *Ruleset, d *setDeltas) error {
	old := e.last
	e.last = nil
	if err := w.writeDeltas(ctx, old, r, d); err != nil {
		return err
	}
	for _, s := range Sets() {
		old.apply(s, d[s].Add, d[s].Del)
	}
	e.last, e.lastMark = old, r.mark()
	return nil
}

func (e *syncEngine) lastStats() ApplyStats { return e.stats }

// check is Check: nothing to compare before the first Apply and after
// Cleanup.
func (e *syncEngine) check(ctx context.Context, w syncWriter) ([]ObjectDrift, error) {
	r := e.want
	if r == nil {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return w.drift(ctx, r)
}

// owned is Owned: the back end's ledger, with the other back end's while
// that one's objects are still there (a switch of back ends: the earlier
// run's virtual servers stay owned).
func (e *syncEngine) owned(ctx context.Context, w syncWriter) (*Ruleset, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := w.ownLedger(ctx)
	if err != nil || e.cleanedOther || e.ownedOther == nil {
		return r, err
	}
	other, err := e.ownedOther(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: reading the %s back end's ledger: %w", w.kind(), otherKind(w.kind()), err)
	}
	return mergeLedgers(w.family(), r, other), nil
}

// cleanup is Cleanup: it forgets what was applied, then removes the back
// end's objects.
func (e *syncEngine) cleanup(ctx context.Context, w syncWriter) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.last, e.want = nil, nil
	return w.removeOwn(ctx)
}
