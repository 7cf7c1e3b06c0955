package iptables

import (
	"strconv"

	"github.com/ipvskit/ipvskit/internal/names"

	"github.com/vishvananda/netns"
)

// DefaultMaxBatchElements bounds the set elements one incremental sync sends
// in one nftables batch when NFTablesConfig.MaxBatchElements is zero.
const DefaultMaxBatchElements = 50000

// NFTablesConfig configures the nftables back end. A nil *NFTablesConfig
// means the defaults.
type NFTablesConfig struct {
	// NetNS is the network namespace to work in (see the package doc's
	// Namespaces).
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

// NFTablesBackend is the nftables back end: the ruleset in a table of its own
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
type NFTablesBackend struct {
	verbs
	b *nftBackend
}

// NewNFTables opens a netlink socket to nf_tables in cfg.NetNS. It does not
// change anything until the first Apply. An error wrapping ErrNotSupported
// means the kernel lacks nf_tables.
func NewNFTables(cfg *NFTablesConfig) (*NFTablesBackend, error) {
	c := NFTablesConfig{}
	if cfg != nil {
		c = *cfg
	}
	if err := checkCommon("NFTablesConfig", c.NetNS, &c.Family, &c.Instance); err != nil {
		return nil, err
	}
	if c.MaxBatchElements == 0 {
		c.MaxBatchElements = DefaultMaxBatchElements
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
	return &NFTablesBackend{verbs{&b.syncEngine, b}, b}, nil
}

// Render returns r as the `nft -f` script a full sync is equivalent to.
func (n *NFTablesBackend) Render(r *Ruleset) (string, error) {
	return renderNFT(r, n.b.table.Name, n.b.mark)
}

// Close releases the socket. It does not change the kernel's state.
func (n *NFTablesBackend) Close() error { return n.b.close() }
