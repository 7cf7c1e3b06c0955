package iptables

import "testing"

func TestNFTModule(t *testing.T) {
	for _, c := range []struct {
		kind string
		f    Family
		want string
	}{
		{featTable, IPv4, "nf_tables"},
		{featChainBase, IPv6, "nf_tables"},
		{featCore, IPv4, "nf_tables"},
		{featSetHash, IPv4, "nf_tables (nft_set_hash on Linux before 4.18)"},
		{featSetBitmap, IPv4, "nf_tables (nft_set_bitmap on Linux before 4.18)"},
		{featSetPipapo, IPv6, "nf_tables, Linux 5.6 or later (nft_set_pipapo)"},
		{featChainNAT, IPv4, "nft_chain_nat (nft_chain_nat_ipv4 before Linux 5.1)"},
		{featChainNAT, IPv6, "nft_chain_nat (nft_chain_nat_ipv6 before Linux 5.1)"},
		{featCt, IPv6, "nft_ct"},
		{featFib, IPv4, "nft_fib_ipv4"},
		{featFib, IPv6, "nft_fib_ipv6"},
		{featMasquerade, IPv4, "nft_masq (nft_masq_ipv4 before Linux 5.2)"},
		{featReject, IPv4, "nft_reject_ipv4"},
		{featReject, IPv6, "nft_reject_ipv6"},
	} {
		if got := nftModule(c.kind, c.f); got != c.want {
			t.Errorf("nftModule(%q, %v) = %q, want %q", c.kind, c.f, got, c.want)
		}
	}
}
