// Package linkcheck holds the rules a link name and a VIP must meet, shared
// by package dummy, its fake (dummytest) and the proxier, so that all three
// refuse the same input for the same reason. Each check returns the reason
// a value is refused, or "" if it is fine; callers wrap the reason in their
// own package's validation error.
package linkcheck

import (
	"net/netip"
	"strconv"
)

// MaxName is IFNAMSIZ minus the terminating NUL.
const MaxName = 15

// Name says why name cannot be the name of a link, by the rules the kernel
// applies (dev_valid_name): 1 to 15 bytes, not "." or "..", no '/', ':' or
// white space, printable ASCII only.
func Name(name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > MaxName:
		return "longer than " + strconv.Itoa(MaxName) + " bytes"
	case name == "." || name == "..":
		return "not a link name"
	}
	for _, r := range name {
		if r == '/' || r == ':' || r <= ' ' || r == 0x7f || r > 0x7e {
			return "contains " + strconv.QuoteRune(r)
		}
	}
	return ""
}

// VIP says why a cannot be bound to a dummy link as a VIP: it must be a
// valid IPv4 or IPv6 unicast address without a zone, not unspecified,
// multicast, IPv6 link-local or IPv4-mapped IPv6.
func VIP(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "not an address"
	case a.Zone() != "":
		return "has a zone"
	case a.Is4In6():
		return "IPv4-mapped IPv6 address; use the IPv4 form"
	case a.IsUnspecified():
		return "unspecified address"
	case a.IsMulticast():
		return "multicast address"
	case a.Is6() && a.IsLinkLocalUnicast():
		return "IPv6 link-local address"
	}
	return ""
}
