// Package iptables holds a service proxy's netfilter rules (those of
// kube-proxy's IPVS mode) as one model, and applies it with either of two
// back ends.
//
// A Ruleset is the whole desired state of one address family: its Options
// (masquerading, the local-traffic detector, the access filters) and the
// members of the proxy's sets (ClusterIPSet, NodePortTCP, IPVSIPs, ...), each a
// SetName whose Shape says which Member fields it holds. The rules follow
// from these. Validate returns a *ValidationError naming the field and the
// value, and every back end validates before it touches the kernel.
//
// # Choosing a back end
//
// IPTablesBackend and NFTablesBackend have the same methods, collected once
// in Interface, which iptablestest.Fake satisfies too: a program that can
// use either takes an Interface (package proxier's Rules is an alias of
// it). Each serves one family in one network namespace, both chosen at
// construction, keeps what it last applied and sends only the difference;
// Check reports drift and Repair undoes it.
//
//   - NFTablesBackend (NewNFTables) writes a table of its own (table ip ipvskit)
//     over netlink, with nft sets in place of ipsets, and runs no binary. It
//     is the proxier's default, and it shares no chain with anyone. Its accepts cannot
//     override another table's drop, so the host firewall must allow the
//     proxied traffic itself (see NFTablesBackend).
//   - IPTablesBackend (NewIPTables) writes kube-proxy IPVS mode's chains in the nat
//     and filter tables with iptables-restore (legacy or nft flavor) over
//     ipsets. Choose it to take a kube-proxy node over in place
//     (IPTablesConfig.AdoptKubeProxy, docs/takeover.md), or where its ACCEPT
//     rules must override a default-DROP filter policy.
//
// Render, RenderIPTables and RenderNFT return, without touching the kernel,
// the text a back end's full sync amounts to: iptables-save lines, or an
// `nft -f` script.
//
// # Namespaces
//
// A back end works in the network namespace its config's NetNS names,
// chosen once at construction, by the rule every ipvskit client follows: 0
// means the namespace of the thread that calls the constructor; a positive
// value is a file descriptor of a network namespace, which the back end
// duplicates (the caller may close theirs as soon as the constructor
// returns); a negative value, netns.None() included, is a *ValidationError.
//
// # Ownership
//
// A back end changes or deletes only objects that carry its mark, the
// comment "ipvskit:<instance>" (on every set of its nftables table; on the
// first rule of each chain, on every jump rule and, through an owner chain,
// on every ipset the iptables back end writes), never anything by name
// alone. Its names derive from the Instance of its config, or are
// kube-proxy's own with KubeProxyNames. An object of its names without the
// mark (kube-proxy's, Docker's, another instance's, or one made by an
// ipvskit version before marks) makes it return a *ForeignError and change
// nothing; IPTablesConfig.AdoptKubeProxy is the one, explicit, exception.
// Switching back ends removes the other back end's marked objects of the
// same instance, once the new ones are in place.
//
// # Example
//
//	r := iptables.NewRuleset(iptables.IPv4, iptables.Options{
//		LocalMatch: iptables.LocalMatch{Mode: iptables.LocalCIDR, CIDR: netip.MustParsePrefix("198.19.0.0/16")},
//	})
//	vip := netip.MustParseAddr("198.18.0.10")
//	r.Add(iptables.ClusterIPSet, iptables.AddrPort(vip, iptables.TCP, 80))
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
// The iptables back end takes the same calls: NewIPTables(nil) in place of
// NewNFTables(nil).
package iptables
