package iptables

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ipvskit/ipvskit/internal/names"
)

// DefaultTable is the nft table of the default instance (table ip ipvskit,
// table ip6 ipvskit).
const DefaultTable = names.DefaultInstance

// nftFamily returns nft's family keyword and address type for f.
func nftFamily(f Family) (fam, addrType string) {
	if f == IPv6 {
		return "ip6", "ipv6_addr"
	}
	return "ip", "ipv4_addr"
}

// nftKeyType returns the nft key type of set s in family f.
func nftKeyType(f Family, s SetName) string {
	_, a := nftFamily(f)
	switch s.Shape() {
	case ShapeAddr:
		return a
	case ShapeAddrPort:
		if s == LBNoNodeAccess {
			return a + " . inet_proto . inet_service . " + a
		}
		return a + " . inet_proto . inet_service"
	case ShapeAddrPortAddr, ShapeAddrPortNet:
		return a + " . inet_proto . inet_service . " + a
	}
	return "inet_service"
}

// nftElement returns member m of set s as nft writes it in an element list.
func nftElement(s SetName, m Member) string {
	switch s.Shape() {
	case ShapeAddr:
		return m.Addr.String()
	case ShapePort:
		return fmt.Sprint(m.Port)
	}
	e := fmt.Sprintf("%s . %s . %d", m.Addr, m.Proto, m.Port)
	switch {
	case s == LBNoNodeAccess:
		e += " . " + m.Addr.String()
	case m.Addr2.IsValid():
		e += " . " + m.Addr2.String()
	case m.Net.IsValid():
		if m.Net.IsSingleIP() {
			e += " . " + m.Net.Addr().String()
		} else {
			e += " . " + m.Net.String()
		}
	}
	return e
}

// nftMembers returns the members of s as the nftables back end stores them.
// For the interval set LoadBalancerSourceCIDR it drops networks contained in
// another network of the same address and port: the kernel refuses
// overlapping intervals, and the union matches the same packets.
func nftMembers(r *Ruleset, s SetName) []Member {
	ms := r.Members(s)
	if s != LoadBalancerSourceCIDR {
		return ms
	}
	out := ms[:0:0]
	for _, m := range ms {
		covered := false
		for _, o := range ms {
			if o != m && o.Addr == m.Addr && o.Proto == m.Proto && o.Port == m.Port &&
				o.Net.Bits() < m.Net.Bits() && o.Net.Contains(m.Net.Addr()) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, m)
		}
	}
	return out
}

// RenderNFT returns the ruleset as an `nft -f` script that re-creates the
// table of instance (as NFTablesConfig.Instance; empty means
// DefaultInstance) atomically (add, delete, then define it), exactly the
// state the nftables back end's full sync creates, its sets marked with
// the instance's comment. Priorities are numeric, as nft 1.0.6 refuses
// "dstnat" on an output hook. It validates r and instance first.
func RenderNFT(r *Ruleset, instance string) (string, error) {
	if instance == "" {
		instance = names.DefaultInstance
	}
	if err := names.CheckInstance(instance); err != nil {
		return "", &ValidationError{Field: "instance", Value: instance, Reason: err.Error()}
	}
	return renderNFT(r, names.Table(instance, false), names.Mark(instance))
}

// renderNFT renders r as the script of table, its sets commented mark.
func renderNFT(r *Ruleset, table, mark string) (string, error) {
	if err := r.Validate(); err != nil {
		return "", err
	}
	f := r.family()
	fam, _ := nftFamily(f)
	var b strings.Builder
	fmt.Fprintf(&b, "add table %s %s\ndelete table %s %s\ntable %s %s {\n", fam, table, fam, table, fam, table)
	for _, s := range Sets() {
		fmt.Fprintf(&b, "\tset %s {\n\t\ttype %s\n", s, nftKeyType(f, s))
		if s == LoadBalancerSourceCIDR {
			b.WriteString("\t\tflags interval\n")
		}
		fmt.Fprintf(&b, "\t\tcomment %s\n", strconv.Quote(mark))
		if ms := nftMembers(r, s); len(ms) > 0 {
			b.WriteString("\t\telements = {")
			for i, m := range ms {
				if i > 0 {
					b.WriteString(",")
				}
				b.WriteString("\n\t\t\t")
				b.WriteString(nftElement(s, m))
			}
			b.WriteString(" }\n")
		}
		b.WriteString("\t}\n")
	}
	for _, c := range nftChains(r, nil) {
		fmt.Fprintf(&b, "\tchain %s {\n", c.name)
		if c.base != nil {
			fmt.Fprintf(&b, "\t\ttype %s hook %s priority %d; policy accept;\n", c.base.typ, c.base.hook, c.base.prio)
		}
		for _, rule := range c.rules {
			fmt.Fprintf(&b, "\t\t%s\n", rule.text)
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
	return b.String(), nil
}
