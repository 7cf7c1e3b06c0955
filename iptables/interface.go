package iptables

import "context"

// Interface is one family's netfilter back end as its users drive it: the
// method set NFTablesBackend, IPTablesBackend and iptablestest.Fake share,
// so code that programs the rules (the proxier's Rules is this interface)
// and the contract suite both back ends and the fake meet take any of the
// three. It is not called Backend: proxier.Backend names which back end a
// Proxier opens.
// Each method's doc is on the back ends (the verbs they share).
type Interface interface {
	// Apply makes the kernel hold r, writing only the difference from
	// what was last applied when it can.
	Apply(ctx context.Context, r *Ruleset) error
	// ApplyFull is Apply, always writing everything.
	ApplyFull(ctx context.Context, r *Ruleset) error
	// Render returns r as the back end's own text (an nft script, or
	// iptables-save lines), changing nothing.
	Render(r *Ruleset) (string, error)
	// Cleanup removes every object the back end owns, and nothing else.
	Cleanup(ctx context.Context) error
	// Check reports how the owned objects differ from what was last
	// applied, changing nothing.
	Check(ctx context.Context) ([]ObjectDrift, error)
	// Repair rewrites every owned object from what was last applied.
	Repair(ctx context.Context) error
	// Owned reads the ownership ledger back from the kernel, changing
	// nothing: the members of the VirtualServers and IPVSIPs sets (nil if
	// the back end has written nothing). An error wrapping fs.ErrExist (a
	// *ForeignError) means objects of the back end's names exist that it
	// did not make.
	Owned(ctx context.Context) (*Ruleset, error)
	// LastStats returns what the last Apply, ApplyFull or Repair sent and
	// where its time went.
	LastStats() ApplyStats
	// Close releases what the back end holds open (sockets, an ipset
	// client); it does not change the kernel's state.
	Close() error
}

var (
	_ Interface = (*NFTablesBackend)(nil)
	_ Interface = (*IPTablesBackend)(nil)
)
