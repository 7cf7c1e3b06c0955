package iptables

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
)

// The nftables back end's rules are built once, as text (for RenderNFT) and
// as the expressions nft compiles that text to (for the netlink back end),
// side by side, so that the two cannot drift apart. The integration tests
// compare what the kernel holds after each.

// nftChain is one chain of the table: its base-chain header (nil for a
// regular chain) and its rules.
type nftChain struct {
	name  string
	base  *nftBase
	rules []nftRule
}

type nftBase struct {
	typ, hook string
	prio      int
}

// nftRule is a rule as nft text and as expressions.
type nftRule struct {
	text  string
	exprs []any
}

// frag is part of a rule.
type frag struct {
	text  string
	exprs []any
}

func rule(frags ...frag) nftRule {
	var r nftRule
	var t []string
	for _, f := range frags {
		t = append(t, f.text)
		r.exprs = append(r.exprs, f.exprs...)
	}
	r.text = strings.Join(t, " ")
	return r
}

// setRefs gives the set IDs of a batch that creates the sets, so that rules
// in the same batch can refer to them; nil for text only.
type setRefs map[SetName]uint32

// nftBuilder builds fragments for one family.
type nftBuilder struct {
	f   Family
	ip  string // "ip" or "ip6"
	ids setRefs
}

// Registers nft uses for concatenations (from nft --debug=netlink): the
// first address in reg 1, then l4proto, port and a second address in the
// 32-bit registers that follow it.
func (b *nftBuilder) regs() (proto, port, addr2 uint32) {
	if b.f == IPv6 {
		return 2, 13, 14
	}
	return 9, 10, 11
}

// addrOffsets returns the network header offsets of saddr and daddr and
// the address length.
func (b *nftBuilder) addrOffsets() (saddr, daddr, n uint32) {
	if b.f == IPv6 {
		return 8, 24, 16
	}
	return 12, 16, 4
}

func (b *nftBuilder) lookup(s SetName) any { return eLookup(s.String(), b.ids[s]) }

func ne32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// concat loads "ip daddr . meta l4proto . th dport" (srcFirst: saddr
// instead of daddr) and, with withSaddr, ". ip saddr", then looks up s.
func (b *nftBuilder) concat(s SetName, srcFirst, withSaddr bool) frag {
	so, do, n := b.addrOffsets()
	pr, po, a2 := b.regs()
	first, dir := do, "daddr"
	if srcFirst {
		first, dir = so, "saddr"
	}
	text := fmt.Sprintf("%s %s . meta l4proto . th dport", b.ip, dir)
	ex := []any{
		eLoad(false, first, n, 1),
		eMeta(metaL4Proto, pr, false),
	}
	if s == LoadBalancerSourceCIDR {
		// nft converts l4proto for interval lookups (a no-op of length 1).
		ex = append(ex, eHton(pr, 1, 2))
	}
	ex = append(ex, eLoad(true, 2, 2, po))
	if withSaddr {
		text += fmt.Sprintf(" . %s saddr", b.ip)
		ex = append(ex, eLoad(false, so, n, a2))
	}
	ex = append(ex, b.lookup(s))
	return frag{text + " @" + s.String(), ex}
}

// dst is "ip daddr . meta l4proto . th dport @s".
func (b *nftBuilder) dst(s SetName) frag { return b.concat(s, false, false) }

// dstSrc is "ip daddr . meta l4proto . th dport . ip saddr @s".
func (b *nftBuilder) dstSrc(s SetName) frag { return b.concat(s, false, true) }

// portLookup is "tcp dport @s" (proto 0: "th dport @s").
func (b *nftBuilder) portLookup(p Protocol, s SetName) frag {
	var ex []any
	text := "th dport @" + s.String()
	if p != 0 {
		text = p.String() + " dport @" + s.String()
		ex = append(ex,
			eMeta(metaL4Proto, 1, false),
			eCmp(false, []byte{byte(p)}))
	}
	ex = append(ex, eLoad(true, 2, 2, 1), b.lookup(s))
	return frag{text, ex}
}

// daddrLookup is "ip daddr @s".
func (b *nftBuilder) daddrLookup(s SetName) frag {
	_, do, n := b.addrOffsets()
	return frag{fmt.Sprintf("%s daddr @%s", b.ip, s), []any{eLoad(false, do, n, 1), b.lookup(s)}}
}

// saddrIn is "ip saddr p" or "ip saddr != p", compiled as nft does: whole
// bytes are compared directly, other prefixes through a mask.
func (b *nftBuilder) saddrIn(p netip.Prefix, neq bool) frag {
	so, _, n := b.addrOffsets()
	neqOp, sym := false, ""
	if neq {
		neqOp, sym = true, "!= "
	}
	text := fmt.Sprintf("%s saddr %s%s", b.ip, sym, p)
	addr := p.Addr().AsSlice()
	bits := p.Bits()
	if bits%8 == 0 {
		k := uint32(bits / 8)
		return frag{text, []any{
			eLoad(false, so, k, 1),
			eCmp(neqOp, addr[:k]),
		}}
	}
	m := make([]byte, n)
	for i := 0; i < bits; i++ {
		m[i/8] |= 0x80 >> (i % 8)
	}
	return frag{text, []any{
		eLoad(false, so, n, 1),
		eBitwise(m, make([]byte, n)),
		eCmp(neqOp, addr),
	}}
}

// iifnameNot is `iifname != "name"` (prefix: `iifname != "name*"`).
func iifnameNot(name string, prefix bool) frag {
	ex := []any{eMeta(metaIIFName, 1, false)}
	if prefix {
		ex = append(ex, eCmp(true, []byte(name)))
		return frag{fmt.Sprintf("iifname != %q", name+"*"), ex}
	}
	data := make([]byte, 16) // IFNAMSIZ
	copy(data, name)
	ex = append(ex, eCmp(true, data))
	return frag{fmt.Sprintf("iifname != %q", name), ex}
}

// fibLocal is "fib daddr type local" (saddr, neq: "fib saddr type != local").
func fibLocal(saddr, neq bool) frag {
	sym, dir := "", "daddr"
	if neq {
		sym = "!= "
	}
	if saddr {
		dir = "saddr"
	}
	return frag{fmt.Sprintf("fib %s type %slocal", dir, sym), []any{
		eFibType(saddr),
		eCmp(neq, ne32(2)), // RTN_LOCAL
	}}
}

func ctStateNew() frag {
	return frag{"ct state new", []any{
		eCtState(),
		eBitwise(ne32(8), ne32(0)), // NF_CT_STATE_BIT(IP_CT_NEW)
		eCmp(true, ne32(0)),
	}}
}

func verdict(kind, chain string) frag {
	text := kind
	if chain != "" {
		text += " " + chain
	}
	return frag{text, []any{eVerdict(kind, chain)}}
}

var (
	ret    = verdict("return", "")
	accept = verdict("accept", "")
	drop   = verdict("drop", "")
)

func jump(chain string) frag { return verdict("jump", chain) }

func masq(fully bool) frag {
	if fully {
		return frag{"masquerade fully-random", []any{eMasq(true)}}
	}
	return frag{"masquerade", []any{eMasq(false)}}
}

func (b *nftBuilder) reject() frag {
	code := uint8(3) // ICMP_PORT_UNREACH
	if b.f == IPv6 {
		code = 4 // ICMPV6_PORT_UNREACH
	}
	return frag{"reject", []any{eReject(code)}}
}

// markOp is "meta mark set meta mark | m" (or ^ m).
func markOp(m uint32, xor bool) frag {
	mask, sym := ^m, "|"
	if xor {
		mask, sym = 0xffffffff, "^"
	}
	return frag{fmt.Sprintf("meta mark set meta mark %s 0x%08x", sym, m), []any{
		eMeta(metaMark, 1, false),
		eBitwise(ne32(mask), ne32(m)),
		eMeta(metaMark, 1, true),
	}}
}

// markClear is "meta mark & m == 0x00000000".
func markClear(m uint32) frag {
	return frag{fmt.Sprintf("meta mark & 0x%08x == 0x00000000", m), []any{
		eMeta(metaMark, 1, false),
		eBitwise(ne32(m), ne32(0)),
		eCmp(false, ne32(0)),
	}}
}

// nftChains returns the chains of the table for a validated ruleset, regular
// chains first, in the order they are created. ids gives the set IDs of the
// batch that creates the sets (nil: text only).
func nftChains(r *Ruleset, ids setRefs) []nftChain {
	f := r.family()
	o := &r.Options
	ip, _ := nftFamily(f)
	b := &nftBuilder{f: f, ip: ip, ids: ids}
	mark := o.mark()
	mm := jump("mark-for-masquerade")

	services := []nftRule{
		rule(b.saddrIn(loopback(f), false), ret),
		rule(b.dst(LoadBalancer), jump("load-balancer")),
	}
	switch d := o.LocalMatch; {
	case o.MasqueradeAll:
		services = append(services, rule(b.dst(ClusterIPSet), mm))
	case d.Mode == LocalCIDR:
		services = append(services, rule(b.saddrIn(d.CIDR, true), b.dst(ClusterIPSet), mm))
	case d.Mode == LocalInterface:
		services = append(services, rule(iifnameNot(d.Interface, false), b.dst(ClusterIPSet), mm))
	case d.Mode == LocalInterfacePrefix:
		services = append(services, rule(iifnameNot(d.Interface, true), b.dst(ClusterIPSet), mm))
	default:
		services = append(services, rule(b.concat(ClusterIPSet, true, false), mm))
	}
	services = append(services,
		rule(b.dst(ExternalIPSet), mm),
		rule(b.dst(ExternalIPSet), fibLocal(true, true), accept),
		rule(b.dst(ExternalIPSet), fibLocal(false, false), accept),
		rule(b.dst(ExternalIPLocal), fibLocal(true, true), accept),
		rule(b.dst(ExternalIPLocal), fibLocal(false, false), accept),
		rule(fibLocal(false, false), jump("node-port")),
		rule(b.dst(ClusterIPSet), accept),
		rule(b.dst(LoadBalancer), accept),
	)
	var ipvsFilter, outFilter []nftRule
	if !o.NoVIPAccessFilter {
		ipvsFilter = []nftRule{
			rule(b.dst(LoadBalancer), ret),
			rule(b.dst(ClusterIPSet), ret),
			rule(b.dst(ExternalIPSet), ret),
			rule(b.dst(ExternalIPLocal), ret),
			rule(b.portLookup(0, HealthCheckNodePort), ret),
			rule(ctStateNew(), b.daddrLookup(IPVSIPs), b.reject()),
		}
	}
	if !o.NoNodeSourceRangeFilter {
		outFilter = []nftRule{rule(b.dstSrc(LBNoNodeAccess), drop)}
	}
	return []nftChain{
		{name: "services", rules: services},
		{name: "load-balancer", rules: []nftRule{
			rule(b.dst(LoadBalancerLocal), ret),
			rule(mm),
		}},
		{name: "node-port", rules: []nftRule{
			rule(b.portLookup(TCP, NodePortLocalTCP), ret),
			rule(b.portLookup(TCP, NodePortTCP), mm),
			rule(b.portLookup(UDP, NodePortLocalUDP), ret),
			rule(b.portLookup(UDP, NodePortUDP), mm),
			rule(b.dst(NodePortLocalSCTP), ret),
			rule(b.dst(NodePortSCTP), mm),
		}},
		{name: "mark-for-masquerade", rules: []nftRule{rule(markOp(mark, false))}},
		{name: "masquerading", rules: []nftRule{
			rule(b.dstSrc(LoopBack), masq(false)),
			rule(markClear(mark), ret),
			rule(markOp(mark, true)),
			rule(masq(true)),
		}},
		{name: "proxy-firewall", rules: []nftRule{rule(b.dst(LoadBalancerFW), jump("source-ranges-firewall"))}},
		{name: "source-ranges-firewall", rules: []nftRule{
			rule(b.dstSrc(LoadBalancerSourceCIDR), ret),
			rule(b.dstSrc(LoadBalancerSourceIP), ret),
			rule(drop),
		}},
		{name: "ipvs-filter", rules: ipvsFilter},
		{name: "ipvs-out-filter", rules: outFilter},
		{name: "nat-prerouting", base: &nftBase{"nat", "prerouting", -100}, rules: []nftRule{rule(jump("services"))}},
		{name: "nat-output", base: &nftBase{"nat", "output", -100}, rules: []nftRule{rule(jump("services"))}},
		{name: "nat-postrouting", base: &nftBase{"nat", "postrouting", 100}, rules: []nftRule{rule(jump("masquerading"))}},
		{name: "filter-input", base: &nftBase{"filter", "input", 0}, rules: []nftRule{rule(jump("proxy-firewall")), rule(jump("ipvs-filter"))}},
		{name: "filter-forward", base: &nftBase{"filter", "forward", 0}, rules: []nftRule{rule(jump("proxy-firewall"))}},
		{name: "filter-output", base: &nftBase{"filter", "output", -110}, rules: []nftRule{rule(jump("ipvs-out-filter"))}},
	}
}
