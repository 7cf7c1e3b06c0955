package ipset

import (
	"fmt"

	"github.com/ipvskit/ipvskit/inet"
)

// Type is an ipset set type: the kind of element a set holds and how it is
// stored.
type Type uint8

// The set types this package supports.
const (
	TypeUnknown   Type = iota
	HashIP             // hash:ip: addresses
	HashIPPort         // hash:ip,port: address, protocol and port
	HashIPPortIP       // hash:ip,port,ip: address, protocol, port and a second address
	HashIPPortNet      // hash:ip,port,net: address, protocol, port and a network
	HashNet            // hash:net: networks
	HashNetPort        // hash:net,port: network, protocol and port
	BitmapPort         // bitmap:port: ports in a range, without protocol
)

var typeNames = [...]string{
	HashIP:        "hash:ip",
	HashIPPort:    "hash:ip,port",
	HashIPPortIP:  "hash:ip,port,ip",
	HashIPPortNet: "hash:ip,port,net",
	HashNet:       "hash:net",
	HashNetPort:   "hash:net,port",
	BitmapPort:    "bitmap:port",
}

// String returns the type's name as ipset writes it, e.g. "hash:ip,port".
func (t Type) String() string {
	if t > TypeUnknown && int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// ParseType returns the Type named s ("hash:ip", "bitmap:port", ...).
func ParseType(s string) (Type, error) {
	for t, n := range typeNames {
		if n != "" && n == s {
			return Type(t), nil
		}
	}
	return TypeUnknown, &ValidationError{Field: "Type", Value: s, Reason: "not a supported set type"}
}

func (t Type) valid() bool { return t > TypeUnknown && int(t) < len(typeNames) }

// isHash reports whether sets of the type take hashsize, maxelem and family.
func (t Type) isHash() bool { return t.valid() && t != BitmapPort }

// hasPort reports whether elements carry a port.
func (t Type) hasPort() bool {
	switch t {
	case HashIPPort, HashIPPortIP, HashIPPortNet, HashNetPort, BitmapPort:
		return true
	}
	return false
}

// hasProto reports whether elements carry a protocol next to the port: every
// *,port type does, and the kernel refuses an element without one; bitmap:port
// refuses one.
func (t Type) hasProto() bool { return t.hasPort() && t != BitmapPort }

// firstIsNet reports whether the first dimension is a network (with CIDR).
func (t Type) firstIsNet() bool { return t == HashNet || t == HashNetPort }

// module names the kernel module that provides the type, for errors.
func (t Type) module() string {
	if !t.valid() {
		return "ip_set"
	}
	n := typeNames[t]
	out := make([]byte, 0, len(n)+7)
	out = append(out, "ip_set_"...)
	for i := 0; i < len(n); i++ {
		switch n[i] {
		case ':':
			out = append(out, '_')
		case ',': // hash:ip,port is ip_set_hash_ipport
		default:
			out = append(out, n[i])
		}
	}
	return string(out)
}

// Family is the address family of a set's elements (inet.Family; the
// kernel's NFPROTO_IPV4 and NFPROTO_IPV6 are AF_INET's and AF_INET6's
// numbers, so it goes on the wire as it is).
type Family = inet.Family

// FamilyUnspec is the family of a set that has none (bitmap:port). Hash
// sets are inet.IPv4 ("inet" in ipset's text) or inet.IPv6 ("inet6").
const FamilyUnspec Family = nfprotoUnspec

// FamilyName returns ipset's own name for f, as `ipset save` and this
// package's errors write it: "inet", "inet6" or "unspec" (f's String says
// "IPv4" or "IPv6", as every other package does).
func FamilyName(f Family) string {
	switch f {
	case inet.IPv4:
		return "inet"
	case inet.IPv6:
		return "inet6"
	case FamilyUnspec:
		return "unspec"
	}
	return f.String()
}

// Protocol is the transport protocol of a *,port element (inet.Protocol).
// Its String is ipset's name for it ("tcp", "udp", ...).
type Protocol = inet.Protocol

// The protocols a *,port element may carry.
const (
	ProtoUnspec Protocol = 0
	TCP                  = inet.TCP
	UDP                  = inet.UDP
	SCTP                 = inet.SCTP
	UDPLite              = inet.UDPLite
)

func validProto(p Protocol) bool { return p == TCP || p == UDP || p == SCTP || p == UDPLite }

func parseProtocol(s string) (Protocol, bool) {
	p, err := inet.ParseProtocol(s)
	return p, err == nil && validProto(p)
}
