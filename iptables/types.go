package iptables

import (
	"net/netip"

	"github.com/ipvskit/ipvskit/inet"
)

// Family is the address family a Ruleset is for (inet.Family). Each back
// end instance serves one family: IPv4 rules go to iptables and `table ip`,
// IPv6 rules to ip6tables and `table ip6`.
type Family = inet.Family

// The families. The zero value is not a family; Ruleset treats it as IPv4.
const (
	IPv4 = inet.IPv4
	IPv6 = inet.IPv6
)

// holds reports whether a is a plain address of family f (no zone, no
// IPv4-mapped IPv6 address).
func holds(f Family, a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	if f == IPv4 {
		return a.Is4()
	}
	return a.Is6() && !a.Is4In6()
}

// loopback returns the loop-back network kube-proxy never sends to services.
func loopback(f Family) netip.Prefix {
	if f == IPv6 {
		return netip.MustParsePrefix("::1/128")
	}
	return netip.MustParsePrefix("127.0.0.0/8")
}

// Protocol is the transport protocol of a service port (inet.Protocol; its
// String is the name iptables and nft write: "tcp", "udp", "sctp").
type Protocol = inet.Protocol

// The protocols a service port may use.
const (
	TCP  = inet.TCP
	UDP  = inet.UDP
	SCTP = inet.SCTP
)

func validProto(p Protocol) bool { return p == TCP || p == UDP || p == SCTP }
