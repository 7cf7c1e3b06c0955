package iptables

import (
	"fmt"
	"net/netip"
)

// Family is the address family a Ruleset is for. Each back end instance
// serves one family: IPv4 rules go to iptables and `table ip`, IPv6 rules to
// ip6tables and `table ip6`.
type Family uint8

// The families. The zero value is not a family; Ruleset treats it as IPv4.
const (
	IPv4 Family = 4
	IPv6 Family = 6
)

// String returns "IPv4" or "IPv6".
func (f Family) String() string {
	switch f {
	case IPv4:
		return "IPv4"
	case IPv6:
		return "IPv6"
	}
	return fmt.Sprintf("Family(%d)", uint8(f))
}

func (f Family) valid() bool { return f == IPv4 || f == IPv6 }

// holds reports whether a is a plain address of family f (no zone, no
// IPv4-mapped IPv6 address).
func (f Family) holds(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	if f == IPv4 {
		return a.Is4()
	}
	return a.Is6() && !a.Is4In6()
}

// loopback returns the loop-back network kube-proxy never sends to services.
func (f Family) loopback() netip.Prefix {
	if f == IPv6 {
		return netip.MustParsePrefix("::1/128")
	}
	return netip.MustParsePrefix("127.0.0.0/8")
}

// bits is the length of a host prefix of the family.
func (f Family) bits() int {
	if f == IPv6 {
		return 128
	}
	return 32
}

// Protocol is the transport protocol of a service port.
type Protocol uint8

// The protocols a service port may use.
const (
	TCP  Protocol = 6
	UDP  Protocol = 17
	SCTP Protocol = 132
)

// String returns "tcp", "udp" or "sctp", as iptables and nft write them.
func (p Protocol) String() string {
	switch p {
	case TCP:
		return "tcp"
	case UDP:
		return "udp"
	case SCTP:
		return "sctp"
	}
	return fmt.Sprintf("proto%d", uint8(p))
}

func (p Protocol) valid() bool { return p == TCP || p == UDP || p == SCTP }
