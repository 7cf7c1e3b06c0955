package iptables

import (
	"encoding/binary"

	"github.com/google/nftables"
)

// nftSetSpec returns the nft set for s in family f, in table t, carrying
// the ownership mark as its comment.
func nftSetSpec(t *nftables.Table, f Family, s SetName, mark string) *nftables.Set {
	addr := nftables.TypeIPAddr
	if f == IPv6 {
		addr = nftables.TypeIP6Addr
	}
	set := &nftables.Set{Table: t, Name: s.String(), Comment: mark}
	switch s.Shape() {
	case ShapeAddr:
		set.KeyType = addr
	case ShapePort:
		set.KeyType = nftables.TypeInetService
	case ShapeAddrPort:
		if s == LBNoNodeAccess {
			set.KeyType = nftables.MustConcatSetType(addr, nftables.TypeInetProto, nftables.TypeInetService, addr)
		} else {
			set.KeyType = nftables.MustConcatSetType(addr, nftables.TypeInetProto, nftables.TypeInetService)
		}
		set.Concatenation = true
	case ShapeAddrPortAddr, ShapeAddrPortNet:
		set.KeyType = nftables.MustConcatSetType(addr, nftables.TypeInetProto, nftables.TypeInetService, addr)
		set.Concatenation = true
		set.Interval = s.Shape() == ShapeAddrPortNet
	}
	return set
}

// nftElem encodes member m of set s as a set element: big-endian fields,
// each padded to 4 bytes in a concatenation. A network becomes an inclusive
// Key..KeyEnd range, as concatenated interval sets want.
func nftElem(s SetName, m Member) nftables.SetElement {
	switch s.Shape() {
	case ShapeAddr:
		return nftables.SetElement{Key: m.Addr.AsSlice()}
	case ShapePort:
		return nftables.SetElement{Key: binary.BigEndian.AppendUint16(nil, m.Port)}
	}
	key := append([]byte(nil), m.Addr.AsSlice()...)
	key = append(key, byte(m.Proto), 0, 0, 0)
	key = binary.BigEndian.AppendUint16(key, m.Port)
	key = append(key, 0, 0)
	switch {
	case s == LBNoNodeAccess:
		return nftables.SetElement{Key: append(key, m.Addr.AsSlice()...)}
	case m.Addr2.IsValid():
		return nftables.SetElement{Key: append(key, m.Addr2.AsSlice()...)}
	case m.Net.IsValid():
		first, last := prefixRange(m.Net)
		end := append(append([]byte(nil), key...), last.AsSlice()...)
		return nftables.SetElement{Key: append(key, first.AsSlice()...), KeyEnd: end}
	}
	return nftables.SetElement{Key: key}
}

func nftElems(s SetName, ms []Member) []nftables.SetElement {
	out := make([]nftables.SetElement, len(ms))
	for i, m := range ms {
		out[i] = nftElem(s, m)
	}
	return out
}
