package convert

import (
	"net/netip"
	"strings"

	"github.com/ipvskit/ipvskit/proxier"
	utilnet "k8s.io/utils/net"
)

// parseIP reads an address as kube-proxy does (net.ParseIP that also takes
// IPv4 octets with leading zeros, as stored by older API servers), in
// netip form: an IPv4-mapped IPv6 address is IPv4, as kube-proxy's family
// test makes it. It reports false for anything else, zoned addresses
// included.
func parseIP(s string) (netip.Addr, bool) {
	ip := utilnet.ParseIPSloppy(s)
	if ip == nil {
		return netip.Addr{}, false
	}
	a, ok := netip.AddrFromSlice(ip)
	return a.Unmap(), ok
}

// parseCIDR reads a prefix as kube-proxy does (leading zeros allowed, host
// bits cleared), trimming spaces first.
func parseCIDR(s string) (netip.Prefix, bool) {
	_, n, err := utilnet.ParseCIDRSloppy(strings.TrimSpace(s))
	if err != nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, bits := n.Mask.Size()
	if a.Is4In6() {
		// Written in IPv6 form: kube-proxy calls it IPv4 (To4), so it is one
		// only if its mask covers the mapping prefix.
		if bits != 128 || ones < 96 {
			return netip.Prefix{}, false
		}
		a, ones = a.Unmap(), ones-96
	}
	p := netip.PrefixFrom(a, ones)
	return p.Masked(), p.IsValid()
}

func familyOf(a netip.Addr) proxier.Family {
	if a.Is4() {
		return proxier.IPv4
	}
	return proxier.IPv6
}

// usableVIP says why an address cannot be a proxier VIP, or "".
func unusableVIP(a netip.Addr) string {
	switch {
	case a.IsUnspecified(), a.IsMulticast(), a.IsLoopback(), a.IsLinkLocalUnicast():
		return "is not a usable VIP (unspecified, multicast, loopback or link-local)"
	}
	return ""
}

// halves are the two prefixes that make up all of a family: a zero-length
// prefix cannot be an ipset member, two /1s can.
func halves(f proxier.Family) []netip.Prefix {
	if f == proxier.IPv6 {
		return []netip.Prefix{netip.MustParsePrefix("::/1"), netip.MustParsePrefix("8000::/1")}
	}
	return []netip.Prefix{netip.MustParsePrefix("0.0.0.0/1"), netip.MustParsePrefix("128.0.0.0/1")}
}

func zeroPrefix(f proxier.Family) netip.Prefix {
	if f == proxier.IPv6 {
		return netip.MustParsePrefix("::/0")
	}
	return netip.MustParsePrefix("0.0.0.0/0")
}
