// Package iptables holds the service proxy's netfilter rules as one model,
// with two back ends that apply it: one that writes kube-proxy IPVS mode's
// iptables chains with iptables-restore over ipsets, and one that writes a
// table of its own through nf_tables, with nft sets in place of the ipsets.
//
// # The model
//
// A Ruleset is the whole desired state of one address family: Options (the
// switches that shape the rules: MasqueradeAll, the local-traffic detector,
// the masquerade mark bit, the VIP access filter, the node source-range
// filter) and the members of the proxy's sets, each a SetName (ClusterIP,
// LoopBack, LoadBalancerSourceCIDR, NodePortTCP, IPVSIPs, ...) whose Shape
// says which Member fields it holds. Members are values (netip addresses and
// prefixes, protocols, ports), never strings. Validate checks everything and
// returns a *ValidationError naming the field and the value; both back ends
// validate before they touch the kernel, so a bad Ruleset changes nothing.
//
// # The back ends
//
// IPTables and NFTables have the same methods (Apply, ApplyFull, Repair,
// Check, Owned, LastStats, Cleanup, Render, Close), so a program that can
// use either declares the small interface it needs, as package proxier does
// with its Rules. Each is bound to one family and one network namespace at
// construction, keeps what it last applied in memory, and on Apply sends only
// the difference: set members added and deleted, all in as few kernel calls
// as possible. Neither reads the kernel back to sync.
//
//   - IPTables writes the owned chains of the nat and filter tables with
//     iptables-restore --noflush (atomic per table; foreign chains and rules
//     are untouched), legacy or nft flavor, ip6tables for IPv6. The jump
//     rules from the built-in chains are inserted by the first Apply and by
//     Repair, not checked on every sync. Its sets are ipsets written through
//     package ipset (netlink, no ipset binary): replaced atomically on a full
//     sync, changed by deltas otherwise; the rules are rewritten only when
//     they change (a set turning empty or non-empty, an option).
//   - NFTables writes table ip ipvskit (or ip6) over netlink with
//     github.com/google/nftables (no nft binary). A full sync re-creates the
//     table in one atomic batch; an incremental sync sends the element deltas
//     of all sets in one batch (bounded by MaxBatchElements). Its chains sit
//     at priorities that order correctly around IPVS's hooks: the nat chains
//     at -100 (prerouting, output) and 100 (postrouting), the filters that
//     must see a VIP as destination before IPVS rewrites it at 0 (input,
//     forward) and -110 (output). It needs net.ipv4.vs.conntrack=1 for the
//     masquerade after IPVS to happen (package sysctl sets it).
//
// What nftables cannot do: an accept in one nftables table does not stop
// another table (iptables-nft's filter table, a firewall's own table) from
// dropping the packet. So the iptables back end's ACCEPT rules that exist
// to override a default-DROP policy (KUBE-FORWARD, and the health-check
// accept in the filter KUBE-NODE-PORT chain) have no equivalent in the
// nftables back end: the host firewall must allow that traffic itself. The
// physdev test of the external-IP accept rules is left out too (nft has no
// physdev match without br_netfilter's meta ibrname).
//
// Both render their desired state as text without touching the kernel
// (Render, RenderIPTables, RenderNFT): iptables-save text of the owned
// chains, or an `nft -f` script that re-creates the table; the kernel tests
// check that iptables-save after an Apply, and `nft list table` after an
// Apply, equal what that text produces.
//
// # Ownership
//
// Names derive from IPTablesConfig.Instance: the iptables back end's chains
// and ipsets start with the instance upper-cased (IPVSKIT-SERVICES,
// IPVSKIT-CLUSTER-IP, IPVSKIT-6-CLUSTER-IP for IPv6), or are kube-proxy's
// own (KUBE-*) with KubeProxyNames; the nftables back end's table is named
// after the instance (table kube-proxy with KubeProxyNames) and every set in
// it carries the comment "ipvskit:<instance>": a table of our name without
// such a set is not ours. Ownership is proven by a mark, never by a name: every
// owned chain starts with a marker rule `-m comment --comment
// "ipvskit:<instance>"`, every jump rule from a built-in chain carries that
// comment, and an owner chain in filter (IPVSKIT-OWNER; KUBE-IPVSKIT-OWNER),
// never jumped to, holds one rule per owned ipset: the kernel then refuses
// to destroy or rename the set, so an ipset is ours exactly when our owner
// chain references it. A full sync, Repair, Owned and Cleanup read
// iptables-save and the ipset headers first; if a chain or ipset they would
// write or delete exists without the mark (or an ipset of our name is of
// another type) they return a *ForeignError naming it and change nothing.
// IPTablesConfig.AdoptKubeProxy (with KubeProxyNames) is the one exception:
// until its first Apply succeeds, kube-proxy's unmarked chains and ipsets are
// taken as the back end's, rewritten and marked in place, and kube-proxy's
// jump rules replaced by marked ones (docs/takeover.md).
// Cleanup removes only marked jumps and chains, the owner chain last, then
// the ipsets it referenced (a back end also takes back what it wrote itself
// since its last Cleanup, if someone flushed a chain's marker away);
// kube-proxy's, kubelet's, Docker's, Calico's and
// other instances' objects, even of the same names, are never flushed,
// deleted or destroyed. Objects made by ipvskit versions before the marks
// carry none: they are left alone, and reported as a ForeignError if they
// hold our names; remove them by hand or with that version's Cleanup. The
// first full sync of each back end removes the other back end's objects of
// the same instance, only those with the mark and only once its own are in
// place; until then its Owned also returns the other's ledger (the
// VirtualServers and IPVSIPs sets), so a proxier that switches back ends
// keeps owning what it made.
//
// # Drift
//
// Check reads the kernel back and reports, as Drift values, every
// difference between the owned objects and the last applied ruleset (that
// of the last Apply, even a failed one), changing nothing: for the
// nftables back end the table, each set's key type and elements, each
// chain's header and rules; for the iptables back end each owned chain's
// rules as iptables-save prints them, the jump rules and each ipset's type
// and members. Foreign objects are not read, so never reported. Repair
// rewrites everything from the last applied ruleset. LastStats says what
// the last Apply or Repair sent (set elements, sets replaced, rule writes)
// and how long its sets and rules took.
//
// # Example: the nftables back end
//
//	r := iptables.NewRuleset(iptables.IPv4, iptables.Options{
//		LocalDetector: iptables.LocalDetector{Mode: iptables.LocalCIDR, CIDR: netip.MustParsePrefix("198.19.0.0/16")},
//	})
//	vip := netip.MustParseAddr("198.18.0.10")
//	r.Add(iptables.ClusterIP, iptables.AddrPort(vip, iptables.TCP, 80))
//	r.Add(iptables.IPVSIPs, iptables.Addr(vip))
//
//	nft, err := iptables.NewNFTables(nil) // current namespace, table ip ipvskit
//	if err != nil {
//		return err
//	}
//	defer nft.Close()
//	if err := nft.Apply(ctx, r); err != nil { // first time: the whole table, one batch
//		return err
//	}
//	r.Add(iptables.NodePortTCP, iptables.Port(30080))
//	if err := nft.Apply(ctx, r); err != nil { // now: one element added
//		return err
//	}
//
// # Example: the iptables back end
//
//	ipt, err := iptables.NewIPTables(&iptables.IPTablesConfig{Family: iptables.IPv4, Flavor: iptables.FlavorAuto})
//	if err != nil {
//		return err
//	}
//	defer ipt.Close()
//	if err := ipt.Apply(ctx, r); err != nil { // ipsets, chains, jump rules
//		return err
//	}
//	r.Remove(iptables.NodePortTCP, iptables.Port(30080))
//	if err := ipt.Apply(ctx, r); err != nil { // one ipset delete, no iptables-restore
//		return err
//	}
//	text, _ := ipt.Render(r) // what iptables-save shows for the owned chains
//	fmt.Print(text)
package iptables
