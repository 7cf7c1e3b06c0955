package conntrack

import (
	"net/netip"
	"strconv"

	"github.com/ipvskit/ipvskit/inet"
)

// Protocol is a flow's transport protocol (inet.Protocol).
type Protocol = inet.Protocol

// Protocols a Filter may name.
const (
	TCP  = inet.TCP
	UDP  = inet.UDP
	SCTP = inet.SCTP
)

// Family is an address family of the conntrack table (inet.Family, the
// kernel's AF_ number, as the request header carries it).
type Family = inet.Family

// Address families.
const (
	IPv4 = inet.IPv4
	IPv6 = inet.IPv6
)

// Tuple is one direction of a flow: where its packets come from and go to.
type Tuple struct {
	Src, Dst netip.AddrPort
}

// Flow is a conntrack entry as far as a Filter looks at it: its protocol,
// the tuple of its original direction (client to the address it asked
// for) and that of its reply direction (from whoever answers, after NAT:
// for a flow an IPVS virtual server balanced, the reply source is the
// destination it chose). It is comparable.
type Flow struct {
	Protocol Protocol
	Original Tuple
	Reply    Tuple
}

// Family is the flow's address family, that of its original destination.
func (f Flow) Family() Family { return inet.FamilyOf(f.Original.Dst.Addr()) }

// String renders f as conntrack -L does, without the state and counters:
// "udp src=198.18.0.1 dst=198.18.100.1 sport=40000 dport=53 src=198.18.11.2
// dst=198.18.0.1 sport=5353 dport=40000".
func (f Flow) String() string {
	b := []byte(f.Protocol.String())
	for _, t := range []Tuple{f.Original, f.Reply} {
		b = append(b, " src="...)
		b = t.Src.Addr().AppendTo(b)
		b = append(b, " dst="...)
		b = t.Dst.Addr().AppendTo(b)
		b = append(b, " sport="...)
		b = strconv.AppendUint(b, uint64(t.Src.Port()), 10)
		b = append(b, " dport="...)
		b = strconv.AppendUint(b, uint64(t.Dst.Port()), 10)
	}
	return string(b)
}
