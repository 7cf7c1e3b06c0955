package dummy

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/ipvskit/ipvskit/internal/linkcheck"
)

// validateName checks name by the kernel's rules for a link name (see
// linkcheck.Name); the error is a *ValidationError for field "name".
func validateName(name string) error {
	if reason := linkcheck.Name(name); reason != "" {
		return &ValidationError{Field: "name", Value: name, Reason: reason}
	}
	return nil
}

// validateAddr checks that a can be bound as a VIP (see linkcheck.VIP);
// field names the argument in the *ValidationError ("addr", "wanted[2]").
func validateAddr(field string, a netip.Addr) error {
	if reason := linkcheck.VIP(a); reason != "" {
		return &ValidationError{Field: field, Value: a.String(), Reason: reason}
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

// validateUpdate checks the arguments of Update and UpdateRoutes: the link
// name, then each address, named add[i] or remove[i].
func validateUpdate(name string, add, remove []netip.Addr) error {
	if err := validateName(name); err != nil {
		return err
	}
	for i, a := range add {
		if err := validateAddr(fmt.Sprintf("add[%d]", i), a); err != nil {
			return err
		}
	}
	for i, a := range remove {
		if err := validateAddr(fmt.Sprintf("remove[%d]", i), a); err != nil {
			return err
		}
	}
	return nil
}
