package ipvsadm

import (
	"cmp"
	"net/netip"

	"github.com/ipvskit/ipvskit/ipvs"
)

// The order of ipvsadm's listings (-L, and -S, with its default --sort), as
// observed of Debian's ipvsadm 1.31: services by firewall mark, family,
// protocol, address and port; a service's destinations by address and port.
// Marks and addresses (by 32-bit word, most significant first) compare by
// the sign of their 32-bit difference, not by value: a mark of 0xffffffff
// lists before 0 ("FWM  -1" first), and 2001:db8:ffff:: before 2001:db8:1::.
// Ports compare by value.

// compareServicesList orders services as ipvsadm lists them.
func compareServicesList(a, b ipvs.Service) int {
	ka, kb := a.Key(), b.Key()
	return cmp.Or(
		wrapCompare(ka.FWMark, kb.FWMark),
		cmp.Compare(ka.Family, kb.Family),
		cmp.Compare(ka.Protocol, kb.Protocol),
		compareAddrList(ka.Addr, kb.Addr),
		cmp.Compare(ka.Port, kb.Port),
	)
}

// compareDestinationsList orders a service's destinations as ipvsadm lists
// them.
func compareDestinationsList(a, b ipvs.Destination) int {
	return cmp.Or(compareAddrList(a.Addr, b.Addr), cmp.Compare(a.Port, b.Port))
}

// wrapCompare is the sign of a-b computed in 32 bits and read as signed.
func wrapCompare(a, b uint32) int {
	return cmp.Compare(int32(a-b), 0)
}

// compareAddrList compares addresses word by word, as wrapCompare does: one
// word for IPv4, four for IPv6 (a's length decides; an IPv4 address is its
// word followed by zeros).
func compareAddrList(a, b netip.Addr) int {
	wa, wb := addrWords(a.AsSlice()), addrWords(b.AsSlice())
	n := 4
	if a.Is4() {
		n = 1
	}
	for i := range n {
		if c := wrapCompare(wa[i], wb[i]); c != 0 {
			return c
		}
	}
	return 0
}

// addrWords is an address's bytes as four big-endian words, zero-padded.
func addrWords(b []byte) [4]uint32 {
	var w [4]uint32
	for i := 0; i+4 <= len(b) && i < 16; i += 4 {
		w[i/4] = uint32(b[i])<<24 | uint32(b[i+1])<<16 | uint32(b[i+2])<<8 | uint32(b[i+3])
	}
	return w
}
