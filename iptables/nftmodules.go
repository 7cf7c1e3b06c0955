package iptables

// The kernel features the nftables back end's table uses, each named by
// the kind of object or expression that needs it, and the module that
// provides it (Linux 5.6 and later names; on older kernels the set types
// and some expressions were modules of their own, named in the text).
// nf_tables itself provides the table, filter chains, the payload, meta,
// cmp, bitwise, byteorder, lookup and immediate (verdict) expressions.
const (
	featTable      = "table"
	featSetHash    = "set type hash (concatenated keys)"
	featSetBitmap  = "set type bitmap (port keys)"
	featSetPipapo  = "set type pipapo (concatenated interval keys)"
	featChainNAT   = "nat chain type"
	featChainBase  = "filter chain type"
	featCore       = "core expressions (payload, meta, cmp, bitwise, byteorder, lookup, immediate)"
	featCt         = "ct expression"
	featFib        = "fib expression"
	featMasquerade = "masq expression"
	featReject     = "reject expression"
)

// nftModule returns the module that provides feature kind in family f.
func nftModule(kind string, f Family) string {
	v := "ipv4"
	if f == IPv6 {
		v = "ipv6"
	}
	switch kind {
	case featSetHash:
		return "nf_tables (nft_set_hash on Linux before 4.18)"
	case featSetBitmap:
		return "nf_tables (nft_set_bitmap on Linux before 4.18)"
	case featSetPipapo:
		return "nf_tables, Linux 5.6 or later (nft_set_pipapo)"
	case featChainNAT:
		return "nft_chain_nat (nft_chain_nat_" + v + " before Linux 5.1)"
	case featCt:
		return "nft_ct"
	case featFib:
		return "nft_fib_" + v
	case featMasquerade:
		return "nft_masq (nft_masq_" + v + " before Linux 5.2)"
	case featReject:
		return "nft_reject_" + v
	}
	return "nf_tables"
}
