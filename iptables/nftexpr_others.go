//go:build !linux

package iptables

// Without google/nftables (Linux only), rules are built as text alone.

const (
	metaL4Proto = 0
	metaIIFName = 0
	metaMark    = 0
)

func eLoad(transport bool, off, n, reg uint32) any { return nil }
func eMeta(k int, reg uint32, set bool) any        { return nil }
func eHton(reg, n, size uint32) any                { return nil }
func eCmp(neq bool, data []byte) any               { return nil }
func eBitwise(mask, xor []byte) any                { return nil }
func eLookup(set string, id uint32) any            { return nil }
func eFibType(saddr bool) any                      { return nil }
func eCtState() any                                { return nil }
func eVerdict(kind, chain string) any              { return nil }
func eMasq(fully bool) any                         { return nil }
func eReject(code uint8) any                       { return nil }
