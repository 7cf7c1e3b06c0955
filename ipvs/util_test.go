package ipvs

import "net/netip"

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// withFamily fills in what the kernel always reports.
func withFamily(s Service) Service {
	s.Family = s.Key().Family
	return s
}
