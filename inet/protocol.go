package inet

import (
	"fmt"
	"strconv"
	"strings"
)

// Protocol is a transport protocol, by its IANA number (the kernel's
// IPPROTO_ value). The zero value is no protocol.
type Protocol uint8

// The protocols a virtual service balances.
const (
	TCP  Protocol = 6   // IPPROTO_TCP
	UDP  Protocol = 17  // IPPROTO_UDP
	SCTP Protocol = 132 // IPPROTO_SCTP
)

// Other protocols that kernel objects made by other programs may carry (an
// ipset *,port element, say).
const (
	ICMP    Protocol = 1   // IPPROTO_ICMP
	ICMPv6  Protocol = 58  // IPPROTO_ICMPV6
	UDPLite Protocol = 136 // IPPROTO_UDPLITE
)

// String returns the protocol's name as ipvsadm, ipset, iptables, nft and
// conntrack write it ("tcp", "udp", "sctp", "icmp", "icmpv6", "udplite"),
// or "Protocol(N)" for any other value.
func (p Protocol) String() string {
	switch p {
	case TCP:
		return "tcp"
	case UDP:
		return "udp"
	case SCTP:
		return "sctp"
	case ICMP:
		return "icmp"
	case ICMPv6:
		return "icmpv6"
	case UDPLite:
		return "udplite"
	}
	return "Protocol(" + strconv.Itoa(int(p)) + ")"
}

// ParseProtocol returns the protocol that String names, in any case: "tcp"
// and "TCP" are both TCP.
func ParseProtocol(name string) (Protocol, error) {
	for _, p := range [...]Protocol{TCP, UDP, SCTP, ICMP, ICMPv6, UDPLite} {
		if strings.EqualFold(p.String(), name) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("inet: unknown protocol %q", name)
}
