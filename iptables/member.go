package iptables

import (
	"net/netip"
	"strconv"
	"strings"
)

// Shape is the kind of key a set holds. It decides which Member fields a
// member of the set uses.
type Shape uint8

// The key shapes of the proxy's sets (ipset type / nft key type):
const (
	// ShapeAddr: Addr (hash:ip / ipv4_addr).
	ShapeAddr Shape = iota + 1
	// ShapeAddrPort: Addr, Proto, Port (hash:ip,port /
	// ipv4_addr . inet_proto . inet_service).
	ShapeAddrPort
	// ShapeAddrPortAddr: Addr, Proto, Port, Addr2 (hash:ip,port,ip).
	ShapeAddrPortAddr
	// ShapeAddrPortNet: Addr, Proto, Port, Net (hash:ip,port,net; an nft
	// interval set).
	ShapeAddrPortNet
	// ShapePort: Port alone (bitmap:port / inet_service).
	ShapePort
)

var shapeNames = [...]string{
	ShapeAddr:         "ip",
	ShapeAddrPort:     "ip,port",
	ShapeAddrPortAddr: "ip,port,ip",
	ShapeAddrPortNet:  "ip,port,net",
	ShapePort:         "port",
}

// String returns the shape in ipset's notation without "hash:", e.g. "ip,port".
func (s Shape) String() string {
	if s > 0 && int(s) < len(shapeNames) {
		return shapeNames[s]
	}
	return "Shape(" + strconv.Itoa(int(s)) + ")"
}

// Member is one key of a set. It is comparable, so a set is a
// map[Member]struct{}. Which fields are used depends on the set's Shape; the
// others must be zero.
type Member struct {
	Addr  netip.Addr
	Proto Protocol
	Port  uint16
	Addr2 netip.Addr
	Net   netip.Prefix
}

// Addr returns a ShapeAddr member.
func Addr(a netip.Addr) Member { return Member{Addr: a} }

// AddrPort returns a ShapeAddrPort member: a service address and port.
func AddrPort(a netip.Addr, p Protocol, port uint16) Member {
	return Member{Addr: a, Proto: p, Port: port}
}

// AddrPortAddr returns a ShapeAddrPortAddr member, e.g. an endpoint's
// address and port with the endpoint's address again as source (hairpin).
func AddrPortAddr(a netip.Addr, p Protocol, port uint16, a2 netip.Addr) Member {
	return Member{Addr: a, Proto: p, Port: port, Addr2: a2}
}

// AddrPortNet returns a ShapeAddrPortNet member: a load-balancer address
// and port with an allowed source network.
func AddrPortNet(a netip.Addr, p Protocol, port uint16, n netip.Prefix) Member {
	return Member{Addr: a, Proto: p, Port: port, Net: n}
}

// Port returns a ShapePort member.
func Port(port uint16) Member { return Member{Port: port} }

// String returns the member in ipset's notation, e.g. "198.18.0.1,tcp:80".
func (m Member) String() string {
	var b strings.Builder
	if m.Addr.IsValid() {
		b.WriteString(m.Addr.String())
		if m.Proto == 0 {
			return b.String()
		}
		b.WriteByte(',')
	}
	if m.Proto != 0 {
		b.WriteString(m.Proto.String())
		b.WriteByte(':')
	}
	b.WriteString(strconv.Itoa(int(m.Port)))
	if m.Addr2.IsValid() {
		b.WriteByte(',')
		b.WriteString(m.Addr2.String())
	}
	if m.Net.IsValid() {
		b.WriteByte(',')
		b.WriteString(m.Net.String())
	}
	return b.String()
}

// Compare orders members as Members sorts them, by Addr, Proto, Port,
// Addr2 and Net: negative if m comes first, positive if o does, 0 if equal.
func (m Member) Compare(o Member) int {
	if c := m.Addr.Compare(o.Addr); c != 0 {
		return c
	}
	if m.Proto != o.Proto {
		return int(m.Proto) - int(o.Proto)
	}
	if m.Port != o.Port {
		return int(m.Port) - int(o.Port)
	}
	if c := m.Addr2.Compare(o.Addr2); c != 0 {
		return c
	}
	if c := m.Net.Addr().Compare(o.Net.Addr()); c != 0 {
		return c
	}
	return m.Net.Bits() - o.Net.Bits()
}
