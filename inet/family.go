package inet

import (
	"net/netip"
	"strconv"
)

// Family is an address family, by the kernel's AF_ number. The zero value
// is no family (AF_UNSPEC).
type Family uint8

// The address families.
const (
	IPv4 Family = 2  // AF_INET
	IPv6 Family = 10 // AF_INET6
)

// FamilyOf returns the family of a: IPv4 for an IPv4 address, IPv6 for an
// IPv6 one (an IPv4-mapped IPv6 address included), and 0 for the zero Addr.
func FamilyOf(a netip.Addr) Family {
	switch {
	case a.Is4():
		return IPv4
	case a.Is6():
		return IPv6
	}
	return 0
}

// String returns "IPv4", "IPv6", or "Family(N)" for any other value.
func (f Family) String() string {
	switch f {
	case IPv4:
		return "IPv4"
	case IPv6:
		return "IPv6"
	}
	return "Family(" + strconv.Itoa(int(f)) + ")"
}

// IsValid reports whether f is IPv4 or IPv6.
func (f Family) IsValid() bool { return f == IPv4 || f == IPv6 }

// Bits returns the length of an address of family f in bits: 32, 128, or 0
// for a value that is not a family.
func (f Family) Bits() int {
	switch f {
	case IPv4:
		return 32
	case IPv6:
		return 128
	}
	return 0
}
