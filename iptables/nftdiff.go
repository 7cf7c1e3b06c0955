package iptables

import "net/netip"

// prefixRange returns the first and last address of p.
func prefixRange(p netip.Prefix) (first, last netip.Addr) {
	first = p.Masked().Addr()
	b := first.AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	last, _ = netip.AddrFromSlice(b)
	return first, last
}

// diffMembers returns the members of want not in have, and of have not in
// want; both inputs sorted.
func diffMembers(want, have []Member) (add, del []Member) {
	i, j := 0, 0
	for i < len(want) || j < len(have) {
		switch {
		case j == len(have) || i < len(want) && want[i].Compare(have[j]) < 0:
			add = append(add, want[i])
			i++
		case i == len(want) || want[i].Compare(have[j]) > 0:
			del = append(del, have[j])
			j++
		default:
			i++
			j++
		}
	}
	return add, del
}
