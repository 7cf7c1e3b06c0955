package iptables

import (
	"context"
	"fmt"

	"github.com/ipvskit/ipvskit/internal/names"
	"github.com/ipvskit/ipvskit/internal/nsfd"
	"github.com/ipvskit/ipvskit/ipset"
	"github.com/vishvananda/netns"
)

// Flavor selects which iptables binaries the iptables back end runs.
type Flavor uint8

// The flavors.
const (
	// FlavorAuto picks the flavor that already holds rules in the
	// namespace (legacy if only it does), else the one the plain
	// "iptables" binary uses.
	FlavorAuto Flavor = iota
	// FlavorLegacy runs iptables-legacy-restore (x_tables).
	FlavorLegacy
	// FlavorNFT runs iptables-nft-restore (nf_tables with xt compat).
	FlavorNFT
)

// String returns "auto", "legacy" or "nft".
func (f Flavor) String() string {
	switch f {
	case FlavorAuto:
		return "auto"
	case FlavorLegacy:
		return "legacy"
	case FlavorNFT:
		return "nft"
	}
	return fmt.Sprintf("Flavor(%d)", uint8(f))
}

// binary returns the name of the flavor's tool for family fam, e.g.
// "ip6tables-nft-restore" for tool "restore".
func (f Flavor) binary(fam Family, tool string) string {
	p := "iptables"
	if fam == IPv6 {
		p = "ip6tables"
	}
	return p + "-" + f.String() + "-" + tool
}

// IPTablesConfig configures the iptables back end. A nil *IPTablesConfig
// means the defaults.
type IPTablesConfig struct {
	// NetNS is the network namespace to work in, chosen once at
	// construction: 0 means the namespace of the thread that calls the
	// constructor; a positive value is a file descriptor of the namespace,
	// which the back end duplicates (the caller may close theirs as soon
	// as the constructor returns); a negative value, netns.None()
	// included, is a *ValidationError.
	NetNS netns.NsHandle
	// Family is the family of the rulesets this back end applies (iptables
	// or ip6tables); zero means IPv4.
	Family Family
	// Flavor chooses legacy or nft binaries; zero means FlavorAuto,
	// decided once at construction.
	Flavor Flavor
	// Instance names this back end's objects and marks them as its own:
	// chains and ipsets start with the instance upper-cased ("IPVSKIT-"),
	// and every rule it writes carries the comment "ipvskit:<instance>".
	// Empty means DefaultInstance. 1-12 bytes of a-z, 0-9 and inner '-',
	// starting with a letter; "kube" and "docker" are refused.
	Instance string
	// KubeProxyNames uses kube-proxy's chain and ipset names (KUBE-*) in
	// place of the instance's, for taking over a kube-proxy node. The
	// objects still carry the instance's mark.
	KubeProxyNames bool
	// AdoptKubeProxy, with KubeProxyNames, takes over what kube-proxy's IPVS
	// mode left on the node: until the first Apply succeeds, a chain or
	// ipset of kube-proxy's name without the mark is the back end's (an
	// ipset still must be of the type the back end writes). That Apply
	// rewrites the chains, marked, in one iptables-restore per table and
	// swaps each ipset's members in atomically, so packets never meet a
	// half-written state; then, its own jump rules in place, it deletes
	// kube-proxy's unmarked jump rules into those chains. From then on the
	// marks decide as usual. Only for a node kube-proxy ran on and no longer
	// runs on: another program's KUBE-* objects would be taken too.
	AdoptKubeProxy bool
}

// IPTables is the iptables back end: the ruleset as kube-proxy's IPVS mode
// writes it, chains in the nat and filter tables applied with
// iptables-restore --noflush (atomic per table, rewriting only the owned
// chains), over ipsets written through package ipset as deltas against what
// it last applied. The jump rules from the built-in chains are inserted by
// the first Apply and by Repair, not checked on every sync. It is not safe
// for concurrent use.
//
// Its ipsets are marked through an owner chain in the filter table
// (IPVSKIT-OWNER; KUBE-IPVSKIT-OWNER with kube-proxy's names), never jumped
// to, with one rule per owned ipset: the kernel then refuses to destroy or
// rename the set, and an ipset is the back end's exactly when that chain
// references it. Its first full sync that succeeds removes the nftables
// back end's marked table of the same instance; until then Owned also
// returns that table's ledger, so a proxier that switches back ends keeps
// owning what it made.
type IPTables struct{ b *iptBackend }

// NewIPTables prepares the back end in cfg.NetNS: it picks the flavor and
// opens an ipset client. It changes nothing until the first Apply. An
// error wrapping ErrNotSupported means the binaries or ipset are missing.
func NewIPTables(cfg *IPTablesConfig) (*IPTables, error) {
	c := IPTablesConfig{}
	if cfg != nil {
		c = *cfg
	}
	if v, reason, ok := nsfd.Check(int(c.NetNS)); !ok {
		return nil, &ValidationError{Field: "IPTablesConfig.NetNS", Value: v, Reason: reason}
	}
	if c.Family == 0 {
		c.Family = IPv4
	}
	if !c.Family.IsValid() {
		return nil, &ValidationError{Field: "IPTablesConfig.Family", Value: c.Family.String(), Reason: "must be IPv4 or IPv6"}
	}
	if c.Instance == "" {
		c.Instance = names.DefaultInstance
	}
	if err := names.CheckInstance(c.Instance); err != nil {
		return nil, &ValidationError{Field: "IPTablesConfig.Instance", Value: c.Instance, Reason: err.Error()}
	}
	if c.Flavor > FlavorNFT {
		return nil, &ValidationError{Field: "IPTablesConfig.Flavor", Value: c.Flavor.String(), Reason: "unknown flavor"}
	}
	if c.AdoptKubeProxy && !c.KubeProxyNames {
		return nil, &ValidationError{Field: "IPTablesConfig.AdoptKubeProxy", Value: "true", Reason: "needs KubeProxyNames: only kube-proxy's objects can be adopted"}
	}
	b, err := newIPTBackend(&c)
	if err != nil {
		return nil, err
	}
	return &IPTables{b: b}, nil
}

// Flavor returns the flavor in use (never FlavorAuto).
func (t *IPTables) Flavor() Flavor { return t.b.flavor }

// Apply makes the kernel hold r: it validates r (nothing is changed if that
// fails), then changes the ipsets by the difference from what it last
// applied and rewrites the owned chains only if their rules changed. The
// first Apply, and any Apply after a failure, reads the kernel back first
// (a *ForeignError, and nothing changed, if a chain or ipset of its names
// lacks its mark), then writes everything (each set replaced atomically)
// and ensures the jump rules.
func (t *IPTables) Apply(ctx context.Context, r *Ruleset) error { return t.b.apply(ctx, t.b, r, false) }

// ApplyFull is Apply, always writing everything.
func (t *IPTables) ApplyFull(ctx context.Context, r *Ruleset) error {
	return t.b.apply(ctx, t.b, r, true)
}

// Repair ensures the jump rules from the built-in chains and rewrites
// everything from the last applied ruleset (that of the last Apply, even
// one that failed): every ipset replaced atomically (re-created if it was
// destroyed), the owned chains restored. It does nothing before the first
// Apply.
func (t *IPTables) Repair(ctx context.Context) error { return t.b.repair(ctx, t.b) }

// Check reads the kernel back and reports every difference from the last
// applied ruleset, changing nothing: an owned chain missing, or its rules
// (iptables-save's lines) missing, extra or out of order; a jump rule from
// a built-in chain missing; an owned ipset missing, of another type, or
// with members missing or extra. It costs one iptables-save and one ipset
// dump (one dump per owned ipset if a foreign set of a type package ipset
// does not model makes the full dump fail). Foreign chains, rules and sets
// are not compared. Before the first Apply, and after Cleanup, there is
// nothing to compare with and it reports nothing.
func (t *IPTables) Check(ctx context.Context) ([]Drift, error) { return t.b.check(ctx, t.b) }

// Owned reads the kernel back, changing nothing: it checks that each chain
// and ipset the back end writes is either absent or carries its mark (a
// *ForeignError names the first that does not), and returns a Ruleset whose
// VirtualServers and IPVSIPs sets hold what the kernel's owned ipsets hold
// (nil if the back end has written nothing yet).
func (t *IPTables) Owned(ctx context.Context) (*Ruleset, error) { return t.b.owned(ctx, t.b) }

// LastStats returns what the last Apply, ApplyFull or Repair sent and
// where its time went.
func (t *IPTables) LastStats() ApplyStats { return t.b.lastStats() }

// Cleanup removes the jump rules, the owned chains and the owned ipsets of
// the back end's family, in both flavors, and nothing else: those that
// carry its mark (see the package doc's Ownership). If an object of its
// names exists without the mark it returns a *ForeignError and changes
// nothing. Missing objects are not errors. It forgets the last applied
// state.
func (t *IPTables) Cleanup(ctx context.Context) error { return t.b.cleanup(ctx, t.b) }

// Render returns r as the owned chains' iptables-save text.
func (t *IPTables) Render(r *Ruleset) (string, error) { return t.b.render(r) }

// Close releases the ipset client. It does not change the kernel's state.
func (t *IPTables) Close() error { return t.b.close() }

// The engine's writers.
var (
	_ syncWriter = (*iptBackend)(nil)
	_ syncWriter = (*nftBackend)(nil)
)

// setClient is the part of *ipset.Client the iptables back end uses.
type setClient interface {
	Replace(ctx context.Context, s ipset.Set, entries []ipset.Entry) error
	Update(ctx context.Context, changes ...ipset.Change) error
	Destroy(ctx context.Context, name string) error
	ListAll(ctx context.Context, headersOnly bool) ([]ipset.SetInfo, error)
	List(ctx context.Context, name string) (ipset.SetInfo, error)
	Close() error
}

// runner runs a binary (inside the back end's namespace).
type runner interface {
	run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error)
}
