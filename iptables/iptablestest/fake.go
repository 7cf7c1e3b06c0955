// Package iptablestest provides an in-memory netfilter back end for tests of
// code that drives package iptables' back ends through an interface (the
// proxier's Rules, for one).
package iptablestest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/ipvskit/ipvskit/iptables"
)

// Fake is a netfilter back end in memory: it validates each Ruleset as the
// real back ends do (a bad one changes nothing), keeps the last one applied
// as the kernel would, and reads its ownership ledger back. Check reports
// the drift given to SetDrift until a Repair. It is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	fam     iptables.Family
	cur     *iptables.Ruleset
	drift   []iptables.Drift
	foreign error
}

// New returns an empty Fake for family f (zero means IPv4).
func New(f iptables.Family) *Fake {
	if f == 0 {
		f = iptables.IPv4
	}
	return &Fake{fam: f}
}

// Apply validates r and makes it what the Fake holds.
func (f *Fake) Apply(ctx context.Context, r *iptables.Ruleset) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fam := r.Family
	if fam == 0 {
		fam = iptables.IPv4
	}
	if fam != f.fam {
		return &iptables.ValidationError{Field: "Family", Value: fam.String(), Reason: "this back end applies " + f.fam.String()}
	}
	if err := r.Validate(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.foreign != nil {
		return f.foreign
	}
	f.cur = r.Clone()
	return nil
}

// ApplyFull is Apply.
func (f *Fake) ApplyFull(ctx context.Context, r *iptables.Ruleset) error { return f.Apply(ctx, r) }

// Render returns r as the nftables back end's script for its default table.
func (f *Fake) Render(r *iptables.Ruleset) (string, error) {
	return iptables.RenderNFT(r, iptables.DefaultTable)
}

// Cleanup forgets what the Fake holds.
func (f *Fake) Cleanup(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cur, f.drift = nil, nil
	return nil
}

// Check returns the drift set with SetDrift, changing nothing.
func (f *Fake) Check(ctx context.Context) ([]iptables.Drift, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.drift), nil
}

// Repair clears the drift.
func (f *Fake) Repair(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drift = nil
	return nil
}

// Owned returns the VirtualServers and IPVSIPs members of what the Fake
// holds (nil if nothing), or the error set with SetForeign.
func (f *Fake) Owned(ctx context.Context) (*iptables.Ruleset, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.foreign != nil {
		return nil, f.foreign
	}
	if f.cur == nil {
		return nil, nil
	}
	r := iptables.NewRuleset(f.fam, iptables.Options{})
	for _, s := range []iptables.SetName{iptables.VirtualServers, iptables.IPVSIPs} {
		r.Add(s, f.cur.Members(s)...)
	}
	return r, nil
}

// SetDrift makes Check report d until the next Repair.
func (f *Fake) SetDrift(d ...iptables.Drift) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drift = slices.Clone(d)
}

// SetForeign makes the Fake's names taken by another program's object:
// Apply and Owned return a *iptables.ForeignError naming it (as the real
// back ends do), until SetForeign("") clears it.
func (f *Fake) SetForeign(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.foreign = nil
	if name != "" {
		f.foreign = &iptables.ForeignError{Kind: "table", Name: name, Reason: "no ownership mark"}
	}
}

// Ruleset returns a copy of what the Fake holds, or nil.
func (f *Fake) Ruleset() *iptables.Ruleset {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur == nil {
		return nil
	}
	return f.cur.Clone()
}

// Dump returns what the Fake holds as Render writes it ("" if nothing).
func (f *Fake) Dump() string {
	r := f.Ruleset()
	if r == nil {
		return ""
	}
	s, err := f.Render(r)
	if err != nil {
		return fmt.Sprintf("# %v\n", err)
	}
	return s
}
