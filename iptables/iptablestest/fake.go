// Package iptablestest provides Fake, an in-memory netfilter back end for
// unit tests of code that drives package iptables' back ends through an
// interface, such as the proxier's Rules.
//
// The Fake behaves as the real back ends do: the same validation and
// errors (a bad Ruleset is refused and changes nothing), the same
// incremental syncs and statistics, Check and Repair against what it last
// applied, Cleanup of only its own objects. A test plays the other
// programs on the node: DropMember and AddMember edit the Fake's sets
// behind its back (Check then reports the drift, Repair undoes it),
// SetForeign makes its names taken, and AddOther leaves an object of
// another program that Cleanup must keep.
//
//	f := iptablestest.New(iptables.IPv4)
//	r := iptables.NewRuleset(iptables.IPv4, iptables.Options{})
//	r.Add(iptables.ClusterIPSet, iptables.AddrPort(netip.MustParseAddr("198.18.0.10"), iptables.TCP, 80))
//	if err := f.Apply(ctx, r); err != nil {
//		return err
//	}
//	fmt.Print(f.Dump()) // the nft script of what it holds
package iptablestest

import (
	"context"
	"slices"
	"sync"

	"github.com/ipvskit/ipvskit/iptables"
)

// Fake is a netfilter back end in memory, with the methods IPTablesBackend and
// NFTablesBackend share: it satisfies iptables.Interface (and so the proxier's Rules,
// an alias of it). It is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	fam     iptables.Family
	held    *iptables.Ruleset // what "the kernel" holds; nil: no objects
	want    *iptables.Ruleset // the last Apply's ruleset, even a failed one
	synced  bool              // the last Apply succeeded: the next may diff
	stats   iptables.ApplyStats
	drift   []iptables.ObjectDrift
	foreign error
	others  []string
}

// New returns an empty Fake for family f (zero means IPv4).
func New(f iptables.Family) *Fake {
	if f == 0 {
		f = iptables.IPv4
	}
	return &Fake{fam: f}
}

// Apply validates r, as the real back ends do (a *iptables.ValidationError
// and nothing changed if that fails), and makes it what the Fake holds: a
// full sync the first time, after a failure or when the Options change,
// else the difference. With SetForeign in effect it returns a
// *iptables.ForeignError and changes nothing.
func (f *Fake) Apply(ctx context.Context, r *iptables.Ruleset) error { return f.apply(ctx, r, false) }

// ApplyFull is Apply, always a full sync.
func (f *Fake) ApplyFull(ctx context.Context, r *iptables.Ruleset) error {
	return f.apply(ctx, r, true)
}

func (f *Fake) apply(ctx context.Context, r *iptables.Ruleset, full bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats = iptables.ApplyStats{}
	if fam := family(r); fam != f.fam {
		return &iptables.ValidationError{Field: "Family", Value: fam.String(), Reason: "this back end applies " + f.fam.String()}
	}
	if err := r.Validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	incremental := !full && f.synced && f.want.Options == r.Options
	if incremental {
		for _, s := range iptables.Sets() {
			add, del := diff(f.want.Members(s), r.Members(s))
			f.stats.ElementsAdded += len(add)
			f.stats.ElementsDeleted += len(del)
			f.held.Remove(s, del...)
			f.held.Add(s, add...)
		}
		f.want = r.Clone()
		return nil
	}
	f.want, f.synced = r.Clone(), false
	f.stats.Full = true
	if f.foreign != nil {
		return f.foreign
	}
	f.fullSync()
	return nil
}

// fullSync rewrites everything from f.want, counted as the nftables back
// end counts a table re-created in one batch.
func (f *Fake) fullSync() {
	f.held, f.synced = f.want.Clone(), true
	f.stats = iptables.ApplyStats{Full: true, SetsReplaced: len(iptables.Sets()), RuleWrites: 1}
	for _, s := range iptables.Sets() {
		f.stats.ElementsAdded += f.want.Len(s)
	}
}

// Repair rewrites everything from the last applied ruleset and clears the
// drift given to SetDrift. It does nothing before the first Apply.
func (f *Fake) Repair(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.want == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f.stats = iptables.ApplyStats{Full: true}
	if f.foreign != nil {
		return f.foreign
	}
	f.fullSync()
	f.drift = nil
	return nil
}

// LastStats returns what the last Apply, ApplyFull or Repair would have
// sent: for a full sync every member and every set, one rule write.
func (f *Fake) LastStats() iptables.ApplyStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// Render returns r as the nftables back end's script for its default table.
func (f *Fake) Render(r *iptables.Ruleset) (string, error) {
	return iptables.RenderNFT(r, "")
}

// Cleanup removes what the Fake holds and forgets what it applied, keeping
// the objects given to AddOther. With SetForeign in effect it returns a
// *iptables.ForeignError and changes nothing.
func (f *Fake) Cleanup(ctx context.Context) error {
	if err := f.lockOwned(ctx); err != nil {
		return err
	}
	defer f.mu.Unlock()
	f.held, f.want, f.synced, f.drift = nil, nil, false, nil
	return nil
}

// Owned returns the VirtualServers and IPVSIPs members of what the Fake
// holds (nil if nothing), or the error set with SetForeign.
func (f *Fake) Owned(ctx context.Context) (*iptables.Ruleset, error) {
	if err := f.lockOwned(ctx); err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	if f.held == nil {
		return nil, nil
	}
	r := iptables.NewRuleset(f.fam, iptables.Options{})
	for _, s := range []iptables.SetName{iptables.VirtualServers, iptables.IPVSIPs} {
		r.Add(s, f.held.Members(s)...)
	}
	return r, nil
}

// lockOwned takes f.mu for a call that reads or removes the owned
// objects; it returns, without the lock, ctx's error or the error set with
// SetForeign.
func (f *Fake) lockOwned(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	if f.foreign != nil {
		f.mu.Unlock()
		return f.foreign
	}
	return nil
}

// Close does nothing; the Fake stays usable.
func (f *Fake) Close() error { return nil }

// SetForeign makes the Fake's names taken by another program's object:
// Apply, Repair, Check, Owned and Cleanup return a *iptables.ForeignError
// naming it (as the real back ends do) and change nothing, until
// SetForeign("") clears it.
func (f *Fake) SetForeign(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.foreign = nil
	if name != "" {
		f.foreign = &iptables.ForeignError{Kind: "table", Name: name, Reason: "no ownership mark"}
	}
}

// AddOther records an object of another program beside the Fake's (any
// text naming it): the Fake never removes it.
func (f *Fake) AddOther(object string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.others = append(f.others, object)
}

// Others returns the objects given to AddOther, in order.
func (f *Fake) Others() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.others)
}

// Ruleset returns a copy of what the Fake holds, drift included, or nil.
func (f *Fake) Ruleset() *iptables.Ruleset {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held == nil {
		return nil
	}
	return f.held.Clone()
}

// Dump returns what the Fake holds as the nftables back end's script
// (RenderNFT; "" if nothing).
func (f *Fake) Dump() string {
	return f.render(func(r *iptables.Ruleset) (string, error) { return f.Render(r) })
}

// DumpIPTables returns what the Fake holds as the iptables back end's
// iptables-save text of its owned chains, default names (RenderIPTables;
// "" if nothing).
func (f *Fake) DumpIPTables() string {
	return f.render(func(r *iptables.Ruleset) (string, error) { return iptables.RenderIPTables(r, nil) })
}

func (f *Fake) render(text func(*iptables.Ruleset) (string, error)) string {
	r := f.Ruleset()
	if r == nil {
		return ""
	}
	s, err := text(r)
	if err != nil {
		// Only a member added with AddMember can be invalid.
		return "# " + err.Error() + "\n"
	}
	return s
}

func family(r *iptables.Ruleset) iptables.Family {
	if r.Family == 0 {
		return iptables.IPv4
	}
	return r.Family
}

var _ iptables.Interface = (*Fake)(nil)
