package iptables

import (
	"fmt"
	"slices"
)

// A Ruleset is the whole desired netfilter state of the proxy for one
// family: the Options that shape the rules, and the members of every set.
// The rules themselves follow from these. The zero value is an empty IPv4
// ruleset with default options. A Ruleset is not safe for concurrent
// mutation; back ends copy what they keep.
type Ruleset struct {
	// Family is IPv4 or IPv6; zero means IPv4.
	Family  Family
	Options Options

	sets [numSets + 1]map[Member]struct{}

	// journal records the sets and members touched since the journal
	// started (epoch), so a back end that applied this same Ruleset at
	// journal position p can find what changed since in O(changes). It
	// starts at the first mark: before one, nobody can ask what changed, and
	// a ruleset being built would only record each of its members again.
	journal   []change
	epoch     uint64
	journaled bool
}

// change is one journal entry: a member of a set that was added or removed.
type change struct {
	set SetName
	m   Member
}

// journalSlack is how far the journal may outgrow the ruleset before it is
// dropped (back ends then diff the whole ruleset once).
const journalSlack = 4096

func (r *Ruleset) record(s SetName, m Member) {
	if !r.journaled {
		return
	}
	r.journal = append(r.journal, change{s, m})
	if len(r.journal) > journalSlack && len(r.journal) > 2*r.size() {
		r.journal = nil
		r.epoch++
	}
}

func (r *Ruleset) size() int {
	n := 0
	for _, s := range r.sets {
		n += len(s)
	}
	return n
}

// journalMark is a position in a Ruleset's journal.
type journalMark struct {
	r     *Ruleset
	epoch uint64
	pos   int
}

func (r *Ruleset) mark() journalMark {
	r.journaled = true
	return journalMark{r, r.epoch, len(r.journal)}
}

// changedSince returns the journal entries after m, if m is a mark of r in
// its current epoch.
func (r *Ruleset) changedSince(m journalMark) ([]change, bool) {
	if m.r != r || m.epoch != r.epoch || m.pos > len(r.journal) {
		return nil, false
	}
	return r.journal[m.pos:], true
}

// NewRuleset returns an empty ruleset for family f with options o.
func NewRuleset(f Family, o Options) *Ruleset { return &Ruleset{Family: f, Options: o} }

func (r *Ruleset) family() Family {
	if r.Family == 0 {
		return IPv4
	}
	return r.Family
}

// Add puts members into set s. Members are checked by Validate (and by every
// back end before it applies anything), not here.
func (r *Ruleset) Add(s SetName, members ...Member) {
	if !s.valid() {
		// Remembered under index 0 so that Validate reports it.
		s = 0
	}
	if r.sets[s] == nil {
		r.sets[s] = make(map[Member]struct{}, len(members))
	}
	for _, m := range members {
		r.sets[s][m] = struct{}{}
		r.record(s, m)
	}
}

// Grow makes room for n more members in set s, so that filling a large set
// does not rehash it as it grows.
func (r *Ruleset) Grow(s SetName, n int) {
	if !s.valid() || n <= 0 {
		return
	}
	if len(r.sets[s]) == 0 {
		r.sets[s] = make(map[Member]struct{}, n)
		return
	}
	m := make(map[Member]struct{}, len(r.sets[s])+n)
	for k := range r.sets[s] {
		m[k] = struct{}{}
	}
	r.sets[s] = m
}

// Remove takes members out of set s; absent members are ignored.
func (r *Ruleset) Remove(s SetName, members ...Member) {
	if !s.valid() {
		return
	}
	for _, m := range members {
		delete(r.sets[s], m)
		r.record(s, m)
	}
}

// Clear empties set s.
func (r *Ruleset) Clear(s SetName) {
	if s.valid() {
		for m := range r.sets[s] {
			r.record(s, m)
		}
		r.sets[s] = nil
	}
}

// Has reports whether m is in set s.
func (r *Ruleset) Has(s SetName, m Member) bool {
	if !s.valid() {
		return false
	}
	_, ok := r.sets[s][m]
	return ok
}

// Len returns the number of members of set s.
func (r *Ruleset) Len(s SetName) int {
	if !s.valid() {
		return 0
	}
	return len(r.sets[s])
}

// Members returns the members of set s, sorted.
func (r *Ruleset) Members(s SetName) []Member {
	if !s.valid() {
		return nil
	}
	out := make([]Member, 0, len(r.sets[s]))
	for m := range r.sets[s] {
		out = append(out, m)
	}
	slices.SortFunc(out, Member.Compare)
	return out
}

// Clone returns a deep copy of r.
func (r *Ruleset) Clone() *Ruleset {
	c := &Ruleset{Family: r.Family, Options: r.Options}
	for i, s := range r.sets {
		if len(s) == 0 {
			continue
		}
		c.sets[i] = make(map[Member]struct{}, len(s))
		for m := range s {
			c.sets[i][m] = struct{}{}
		}
	}
	return c
}

// Equal reports whether r and o describe the same state.
func (r *Ruleset) Equal(o *Ruleset) bool {
	if r.family() != o.family() || r.Options != o.Options {
		return false
	}
	for i := range r.sets {
		if len(r.sets[i]) != len(o.sets[i]) {
			return false
		}
		for m := range r.sets[i] {
			if _, ok := o.sets[i][m]; !ok {
				return false
			}
		}
	}
	return true
}

// Contains reports whether every member of every set of o is in r (their
// families and options aside): whether r is already the union of the two.
func (r *Ruleset) Contains(o *Ruleset) bool {
	for i := range o.sets {
		if len(o.sets[i]) > len(r.sets[i]) {
			return false
		}
		for m := range o.sets[i] {
			if _, ok := r.sets[i][m]; !ok {
				return false
			}
		}
	}
	return true
}

// Validate checks the family, the options and every member of every set. It
// returns a *ValidationError naming the first bad field and its value (sets
// in SetName order; within a set, the smallest bad member).
func (r *Ruleset) Validate() error { return r.validateChanges(nil) }

// validateChanges is Validate, except that with old (a ruleset that was
// valid, of the same family and options) it checks only the members that
// are not in old, so that a small change costs little.
func (r *Ruleset) validateChanges(old *Ruleset) error {
	f := r.family()
	if old != nil && (old.family() != f || old.Options != r.Options) {
		old = nil
	}
	if old == nil {
		if !f.IsValid() {
			return &ValidationError{Field: "Family", Value: f.String(), Reason: "must be IPv4 or IPv6"}
		}
		if err := r.Options.validate(f); err != nil {
			return err
		}
	}
	if len(r.sets[0]) > 0 {
		return &ValidationError{Field: "SetName", Value: "unknown", Reason: fmt.Sprintf("%d members were added to a set that does not exist", len(r.sets[0]))}
	}
	for _, s := range Sets() {
		var (
			bad    Member
			badErr error
		)
		for m := range r.sets[s] {
			if old != nil {
				if _, ok := old.sets[s][m]; ok {
					continue
				}
			}
			if err := checkMember(f, s, m); err != nil && (badErr == nil || m.Compare(bad) < 0) {
				bad, badErr = m, err
			}
		}
		if badErr != nil {
			return badErr
		}
	}
	return nil
}

// validateAdds checks the added members of deltas d (of a ruleset whose
// family and options were already validated).
func (r *Ruleset) validateAdds(d *setDeltas) error {
	if len(r.sets[0]) > 0 {
		return &ValidationError{Field: "SetName", Value: "unknown", Reason: fmt.Sprintf("%d members were added to a set that does not exist", len(r.sets[0]))}
	}
	for _, s := range Sets() {
		for _, m := range d[s].Add {
			if err := checkMember(r.family(), s, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// apply changes r by adding add and removing del in set s.
func (r *Ruleset) apply(s SetName, add, del []Member) {
	r.Remove(s, del...)
	if len(add) > 0 {
		r.Add(s, add...)
	}
}

// setDelta is the change of one set: the members to add and to delete,
// each sorted.
type setDelta struct{ Add, Del []Member }

// setDeltas is the change of every set, indexed by SetName.
type setDeltas [numSets + 1]setDelta

// adds is d without its deletions.
func (d *setDeltas) adds() setDeltas {
	var out setDeltas
	for s := range d {
		out[s].Add = d[s].Add
	}
	return out
}

// dels is d without its additions.
func (d *setDeltas) dels() setDeltas {
	var out setDeltas
	for s := range d {
		out[s].Del = d[s].Del
	}
	return out
}

// deltas returns, per set, the members in r and not in old (Add) and in
// old and not in r (Del). With a journal mark m taken when old was made
// from r, it looks only at the members touched since; otherwise it compares
// every set.
func (r *Ruleset) deltas(old *Ruleset, m journalMark) (out setDeltas) {
	changes, ok := r.changedSince(m)
	if !ok {
		for _, s := range Sets() {
			out[s].Add, out[s].Del = r.delta(old, s)
		}
		return out
	}
	seen := make(map[change]bool, len(changes))
	for _, c := range changes {
		if seen[c] || !c.set.valid() {
			continue
		}
		seen[c] = true
		now, before := r.Has(c.set, c.m), old.Has(c.set, c.m)
		switch {
		case now && !before:
			out[c.set].Add = append(out[c.set].Add, c.m)
		case before && !now:
			out[c.set].Del = append(out[c.set].Del, c.m)
		}
	}
	for s := range out {
		slices.SortFunc(out[s].Add, Member.Compare)
		slices.SortFunc(out[s].Del, Member.Compare)
	}
	return out
}

// delta returns the members of set s that are in r but not in old (add) and
// in old but not in r (del).
func (r *Ruleset) delta(old *Ruleset, s SetName) (add, del []Member) {
	for m := range r.sets[s] {
		if _, ok := old.sets[s][m]; !ok {
			add = append(add, m)
		}
	}
	for m := range old.sets[s] {
		if _, ok := r.sets[s][m]; !ok {
			del = append(del, m)
		}
	}
	slices.SortFunc(add, Member.Compare)
	slices.SortFunc(del, Member.Compare)
	return add, del
}
