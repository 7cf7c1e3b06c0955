package iptables

import "context"

// verbs are the methods IPTablesBackend and NFTablesBackend share, each written once over
// the sync engine; how each back end writes is said in its type's doc.
type verbs struct {
	e *syncEngine
	w syncWriter
}

// Apply makes the kernel hold r. It validates r first and changes nothing
// if that fails. It then writes only the difference from what it last
// applied, or, when it has nothing to diff against (the first Apply, a
// change of Options, any Apply after a failure), reads the kernel back (a
// *ForeignError, and nothing changed, if an object of its names lacks its
// mark) and writes everything. With no change it writes nothing.
func (v verbs) Apply(ctx context.Context, r *Ruleset) error { return v.e.apply(ctx, v.w, r, false) }

// ApplyFull is Apply, always writing everything.
func (v verbs) ApplyFull(ctx context.Context, r *Ruleset) error { return v.e.apply(ctx, v.w, r, true) }

// Repair rewrites everything from the last applied ruleset (that of the
// last Apply, even one that failed), undoing what others changed: IPTablesBackend
// re-inserts its jump rules, replaces every ipset atomically (re-creating
// those destroyed) and restores the owned chains; NFTablesBackend re-creates its
// table in one batch. It does nothing before the first Apply.
func (v verbs) Repair(ctx context.Context) error { return v.e.repair(ctx, v.w) }

// Check reads the kernel back and reports every difference from the last
// applied ruleset, changing nothing. Other programs' objects are not
// compared. Before the first Apply, and after Cleanup, there is nothing to
// compare with and it reports nothing.
//
// IPTablesBackend reports an owned chain missing, or its rules (iptables-save's
// lines) missing, extra or out of order; a jump rule from a built-in chain
// missing; an owned ipset missing, of another type, or with members missing
// or extra. It costs one iptables-save and one ipset dump (one dump per
// owned ipset if a foreign set of a type package ipset does not model makes
// the full dump fail).
//
// NFTablesBackend reports, after checking that the table is its own (a
// *ForeignError if not), the table missing; a set missing, of another key
// type, without the mark, or with members missing or extra; a chain
// missing, with another hook, priority or policy, or with rules missing,
// extra or out of order; a set or chain in the table that it did not make.
// Other tables are not read. It costs one dump per set and per chain.
func (v verbs) Check(ctx context.Context) ([]ObjectDrift, error) { return v.e.check(ctx, v.w) }

// Owned reads the kernel back, changing nothing: it checks that each object
// the back end writes (IPTablesBackend: each chain and ipset; NFTablesBackend: its table)
// is either absent or carries its mark (a *ForeignError names the first that
// does not), and returns a Ruleset whose VirtualServers and IPVSIPs sets
// hold what the owned sets hold (nil if the back end has written nothing
// yet).
func (v verbs) Owned(ctx context.Context) (*Ruleset, error) { return v.e.owned(ctx, v.w) }

// LastStats returns what the last Apply, ApplyFull or Repair sent and
// where its time went.
func (v verbs) LastStats() ApplyStats { return v.e.lastStats() }

// Cleanup removes the back end's objects, those that carry its mark (see
// the package doc's Ownership), and nothing else: IPTablesBackend's jump rules,
// owned chains and owned ipsets of its family, in both flavors; NFTablesBackend'
// table. If an object of its names exists without the mark it returns a
// *ForeignError and changes nothing. Missing objects are not errors. It
// forgets the last applied state.
func (v verbs) Cleanup(ctx context.Context) error { return v.e.cleanup(ctx, v.w) }
