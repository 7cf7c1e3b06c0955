package iptables

import (
	"context"
	"strconv"

	"github.com/ipvskit/ipvskit/internal/names"
	"github.com/ipvskit/ipvskit/internal/nsfd"

	"github.com/vishvananda/netns"
)

// DefaultMaxBatchElements bounds the set elements one incremental sync sends
// in one nftables batch when NFTablesConfig.MaxBatchElements is zero.
const DefaultMaxBatchElements = 50000

// NFTablesConfig configures the nftables back end. A nil *NFTablesConfig
// means the defaults.
type NFTablesConfig struct {
	// NetNS is the network namespace to work in, chosen once at
	// construction: 0 means the namespace of the thread that calls the
	// constructor; a positive value is a file descriptor of the namespace,
	// which the back end duplicates (the caller may close theirs as soon
	// as the constructor returns); a negative value, netns.None()
	// included, is a *ValidationError.
	NetNS netns.NsHandle
	// Family is the family of the rulesets this back end applies; zero
	// means IPv4. The table is in nft family ip (IPv4) or ip6 (IPv6).
	Family Family
	// Instance names the table (table ip <instance>) and its mark: every
	// set in it carries the comment "ipvskit:<instance>". Empty means
	// DefaultInstance. 1-12 bytes of a-z, 0-9 and inner '-', starting with
	// a letter; names of other programs' tables and chains (kube,
	// kube-proxy, docker, filter, nat, mangle, raw, security, broute) are
	// refused.
	Instance string
	// KubeProxyNames names the table "kube-proxy" (that of kube-proxy's
	// nftables mode), the only way to get that name; it is still written
	// only when absent or marked by Instance.
	KubeProxyNames bool
	// MaxBatchElements bounds the set elements (deletes plus adds) an
	// incremental sync sends per batch; a larger delta is sent as several
	// batches, each atomic. Zero means DefaultMaxBatchElements. A full sync
	// is always one batch (the table is re-created atomically); the
	// library splits its elements into messages of at most 64 KiB.
	MaxBatchElements int
}

// NFTables is the nftables back end: the ruleset in a table of its own
// (table ip ipvskit or table ip6 ipvskit), sets with concatenated keys in
// place of ipsets, written over netlink through github.com/google/nftables
// (no nft binary). It keeps what it last applied in memory: a sync with a
// changed ruleset sends only the changed set elements, all sets in one
// batch, without reading anything back; the first sync, a change of
// Options and any sync after a failure re-create the whole table in one
// batch. It is not safe for concurrent use.
//
// Its chains sit at priorities that order them around IPVS's hooks: nat at
// -100 (prerouting, output) and 100 (postrouting); the filters that must
// see a VIP as the destination before IPVS rewrites it at 0 (input,
// forward) and -110 (output). The masquerade after IPVS needs
// net.ipv4.vs.conntrack=1 (package sysctl's IPVS profile sets it).
//
// The table is its own only if it carries its mark (a set commented
// "ipvskit:<instance>"). A full sync, Repair, Check, Owned and Cleanup read
// the table's set list first and return a *ForeignError, sending nothing,
// for a table of its name without the mark; the batch that follows is
// bound to the ruleset generation that was read, so a table created in
// between is not overwritten. The first full sync that succeeds also
// removes the iptables back end's objects of the same instance (only
// those it marked); if that fails the table stays applied, the error is
// returned and the next full sync tries again. Until then Owned also
// returns the iptables back end's ledger.
//
// A full sync the kernel refuses for a missing feature (ENOENT,
// EOPNOTSUPP) is diagnosed in a throw-away table ipvskit-probe-<random>,
// always deleted: the error wraps ErrNotSupported and names the module.
//
// An nftables accept ends processing only in this table: another table (for
// example iptables-nft's filter table) can still drop the packet. So the
// iptables back end's ACCEPT rules in KUBE-FORWARD and the health-check
// KUBE-NODE-PORT chain have no equivalent here: the host firewall must
// allow that traffic itself. For the same reason the physdev test of the
// external-IP accept rules is left out.
type NFTables struct{ b *nftBackend }

// NewNFTables opens a netlink socket to nf_tables in cfg.NetNS. It does not
// change anything until the first Apply. An error wrapping ErrNotSupported
// means the kernel lacks nf_tables.
func NewNFTables(cfg *NFTablesConfig) (*NFTables, error) {
	c := NFTablesConfig{}
	if cfg != nil {
		c = *cfg
	}
	if v, reason, ok := nsfd.Check(int(c.NetNS)); !ok {
		return nil, &ValidationError{Field: "NFTablesConfig.NetNS", Value: v, Reason: reason}
	}
	if c.Family == 0 {
		c.Family = IPv4
	}
	if c.Instance == "" {
		c.Instance = names.DefaultInstance
	}
	if c.MaxBatchElements == 0 {
		c.MaxBatchElements = DefaultMaxBatchElements
	}
	if !c.Family.IsValid() {
		return nil, &ValidationError{Field: "NFTablesConfig.Family", Value: c.Family.String(), Reason: "must be IPv4 or IPv6"}
	}
	if err := names.CheckInstance(c.Instance); err != nil {
		return nil, &ValidationError{Field: "NFTablesConfig.Instance", Value: c.Instance, Reason: err.Error()}
	}
	if !c.KubeProxyNames && c.Instance == names.KubeProxyTable {
		return nil, &ValidationError{Field: "NFTablesConfig.Instance", Value: c.Instance,
			Reason: "the table of kube-proxy's nftables mode: opted into with KubeProxyNames"}
	}
	if c.MaxBatchElements < 0 {
		return nil, &ValidationError{Field: "NFTablesConfig.MaxBatchElements", Value: strconv.Itoa(c.MaxBatchElements), Reason: "must not be negative"}
	}
	b, err := newNFTBackend(&c)
	if err != nil {
		return nil, err
	}
	return &NFTables{b: b}, nil
}

// Apply makes the kernel hold r: it validates r (nothing is sent if that
// fails), then sends the difference from what it last applied, or
// re-creates the table when there is nothing to diff against. With no
// change it sends nothing. If it fails, the next Apply re-creates the table.
func (n *NFTables) Apply(ctx context.Context, r *Ruleset) error { return n.b.apply(ctx, n.b, r, false) }

// ApplyFull is Apply, always re-creating the table in one batch.
func (n *NFTables) ApplyFull(ctx context.Context, r *Ruleset) error {
	return n.b.apply(ctx, n.b, r, true)
}

// Repair re-creates the table from the last applied ruleset (that of the
// last Apply, even one that failed), undoing any change made to it by
// others, in one batch. It does nothing before the first Apply.
func (n *NFTables) Repair(ctx context.Context) error { return n.b.repair(ctx, n.b) }

// Check reads the owned table back (a *ForeignError if it is not ours) and
// reports every difference from the last applied ruleset, changing
// nothing: the table missing; a set missing, of another key type, without
// the mark, or with members missing or extra; a chain missing,
// with another hook, priority or policy, or with rules missing, extra or
// out of order; a set or chain in the table that the back end did not
// make. Other tables are not read. Before the first Apply, and after
// Cleanup, there is nothing to compare with and it reports nothing. It
// costs one dump per set and per chain.
func (n *NFTables) Check(ctx context.Context) ([]Drift, error) { return n.b.check(ctx, n.b) }

// Owned reads the kernel back, changing nothing: it checks that the table
// is either absent or carries the back end's mark (a *ForeignError if not),
// and returns a Ruleset whose VirtualServers and IPVSIPs sets hold what the
// table's sets hold (nil if there is no table).
func (n *NFTables) Owned(ctx context.Context) (*Ruleset, error) { return n.b.owned(ctx, n.b) }

// LastStats returns what the last Apply, ApplyFull or Repair sent and
// where its time went.
func (n *NFTables) LastStats() ApplyStats { return n.b.lastStats() }

// Cleanup deletes the owned table (nothing else) and forgets the last
// applied state. A missing table is not an error; a foreign one is left,
// with a *ForeignError.
func (n *NFTables) Cleanup(ctx context.Context) error { return n.b.cleanup(ctx, n.b) }

// Render returns r as the `nft -f` script a full sync is equivalent to.
func (n *NFTables) Render(r *Ruleset) (string, error) {
	return renderNFT(r, n.b.table.Name, n.b.mark)
}

// Close releases the socket. It does not change the kernel's state.
func (n *NFTables) Close() error { return n.b.close() }
