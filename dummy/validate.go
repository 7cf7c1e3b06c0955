package dummy

import (
	"net/netip"
	"strconv"
)

// maxNameLen is IFNAMSIZ minus the terminating NUL.
const maxNameLen = 15

// ValidateName reports whether name can be the name of a link, with the rules
// the kernel applies (dev_valid_name): 1 to 15 bytes, not "." or "..", no
// '/', ':' or white space. The error is a *ValidationError for field "name".
func ValidateName(name string) error {
	bad := func(reason string) error {
		return &ValidationError{Field: "name", Value: name, Reason: reason}
	}
	switch {
	case name == "":
		return bad("empty")
	case len(name) > maxNameLen:
		return bad("longer than " + strconv.Itoa(maxNameLen) + " bytes")
	case name == "." || name == "..":
		return bad("not a link name")
	}
	for _, r := range name {
		if r == '/' || r == ':' || r <= ' ' || r == 0x7f || r > 0x7e {
			return bad("contains " + strconv.QuoteRune(r))
		}
	}
	return nil
}

// ValidateAddr reports whether a can be bound to a dummy link as a VIP: a
// valid IPv4 or IPv6 unicast address without a zone, not unspecified,
// multicast, IPv6 link-local or IPv4-mapped IPv6. field names the argument
// in the error ("addr", "wanted[2]"); the error is a *ValidationError.
func ValidateAddr(field string, a netip.Addr) error {
	bad := func(reason string) error {
		return &ValidationError{Field: field, Value: a.String(), Reason: reason}
	}
	switch {
	case !a.IsValid():
		return bad("not an address")
	case a.Zone() != "":
		return bad("has a zone")
	case a.Is4In6():
		return bad("IPv4-mapped IPv6 address; use the IPv4 form")
	case a.IsUnspecified():
		return bad("unspecified address")
	case a.IsMulticast():
		return bad("multicast address")
	case a.Is6() && a.IsLinkLocalUnicast():
		return bad("IPv6 link-local address")
	}
	return nil
}

// hostPrefix is a as a /32 or /128 prefix, the form VIPs are bound in.
func hostPrefix(a netip.Addr) netip.Prefix {
	return netip.PrefixFrom(a, a.BitLen())
}

// kernelManaged reports whether Sync leaves p alone although nobody asked
// for it: the IPv6 link-local address the kernel adds when a link goes up.
func kernelManaged(p netip.Prefix) bool {
	return p.Addr().Is6() && p.Addr().IsLinkLocalUnicast()
}

// maxAliasLen is IFALIASZ minus the terminating NUL.
const maxAliasLen = 255

// ValidateOwner reports whether owner can be a Client's mark (a link alias):
// 1 to 255 bytes of printable ASCII. The error is a *ValidationError for
// field "Config.Owner".
func ValidateOwner(owner string) error {
	bad := func(reason string) error {
		return &ValidationError{Field: "Config.Owner", Value: owner, Reason: reason}
	}
	switch {
	case owner == "":
		return bad("empty")
	case len(owner) > maxAliasLen:
		return bad("longer than " + strconv.Itoa(maxAliasLen) + " bytes")
	}
	for _, r := range owner {
		if r < ' ' || r > 0x7e {
			return bad("contains " + strconv.QuoteRune(r))
		}
	}
	return nil
}
