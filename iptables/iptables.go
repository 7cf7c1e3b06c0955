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
	// NetNS is the network namespace to work in (see the package doc's
	// Namespaces).
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

// IPTablesBackend is the iptables back end: the ruleset as kube-proxy's IPVS mode
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
type IPTablesBackend struct {
	verbs
	b *iptBackend
}

// SetMembers reads back the members of the ipsets the back end owns
// (while adopting, IPTablesConfig.AdoptKubeProxy, kube-proxy's), changing
// nothing: a Ruleset holding only set members, nil if it owns none. An
// object of its names without its mark is a *ForeignError, as for Owned.
// It costs one iptables-save, an ipset header dump and one dump per set.
func (b *IPTablesBackend) SetMembers(ctx context.Context) (*Ruleset, error) {
	return b.b.setMembers(ctx)
}

// NewIPTables prepares the back end in cfg.NetNS: it picks the flavor and
// opens an ipset client. It changes nothing until the first Apply. An
// error wrapping ErrNotSupported means the binaries or ipset are missing.
func NewIPTables(cfg *IPTablesConfig) (*IPTablesBackend, error) {
	c := IPTablesConfig{}
	if cfg != nil {
		c = *cfg
	}
	if err := checkCommon("IPTablesConfig", c.NetNS, &c.Family, &c.Instance); err != nil {
		return nil, err
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
	return &IPTablesBackend{verbs{&b.syncEngine, b}, b}, nil
}

// Flavor returns the flavor in use (never FlavorAuto).
func (t *IPTablesBackend) Flavor() Flavor { return t.b.flavor }

// Render returns r as the owned chains' iptables-save text.
func (t *IPTablesBackend) Render(r *Ruleset) (string, error) { return t.b.render(r) }

// Close releases the ipset client. It does not change the kernel's state.
func (t *IPTablesBackend) Close() error { return t.b.close() }

// checkCommon checks, and defaults, what both back ends' configs (named
// cfg in errors) hold: NetNS, Family and Instance.
func checkCommon(cfg string, ns netns.NsHandle, fam *Family, instance *string) error {
	if v, reason, ok := nsfd.Check(int(ns)); !ok {
		return &ValidationError{Field: cfg + ".NetNS", Value: v, Reason: reason}
	}
	if *fam == 0 {
		*fam = IPv4
	}
	if !fam.IsValid() {
		return &ValidationError{Field: cfg + ".Family", Value: fam.String(), Reason: "must be IPv4 or IPv6"}
	}
	if *instance == "" {
		*instance = names.DefaultInstance
	}
	if err := names.CheckInstance(*instance); err != nil {
		return &ValidationError{Field: cfg + ".Instance", Value: *instance, Reason: err.Error()}
	}
	return nil
}

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
