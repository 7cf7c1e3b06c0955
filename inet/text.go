package inet

import (
	"fmt"
	"strconv"
	"strings"
)

// quote quotes s as Go would, so that spaces, newlines and empty strings in
// refused values stay visible.
func quote(s string) string { return strconv.Quote(s) }

// MarshalText writes "IPv4" or "IPv6" (String's words), so a Family in JSON
// or YAML is a word rather than the kernel's number. Any other value is an
// error.
func (f Family) MarshalText() ([]byte, error) {
	if !f.IsValid() {
		return nil, fmt.Errorf("inet: %v is not an address family", f)
	}
	return []byte(f.String()), nil
}

// UnmarshalText reads a family as ParseFamily does.
func (f *Family) UnmarshalText(text []byte) error {
	v, err := ParseFamily(string(text))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// ParseFamily returns the family a name gives, in any case: "IPv4" (String's
// word), "ipv4", "inet" or "4" for IPv4; "IPv6", "inet6" or "6" for IPv6.
func ParseFamily(name string) (Family, error) {
	switch strings.ToLower(name) {
	case "ipv4", "inet", "4":
		return IPv4, nil
	case "ipv6", "inet6", "6":
		return IPv6, nil
	}
	return 0, fmt.Errorf("inet: unknown address family %q (want IPv4 or IPv6)", name)
}

// MarshalText writes String's name ("tcp", "udp", ...). A value String does
// not name is an error.
func (p Protocol) MarshalText() ([]byte, error) {
	if _, err := ParseProtocol(p.String()); err != nil {
		return nil, fmt.Errorf("inet: %v is not a known protocol", p)
	}
	return []byte(p.String()), nil
}

// UnmarshalText reads a protocol as ParseProtocol does, in any case.
func (p *Protocol) UnmarshalText(text []byte) error {
	v, err := ParseProtocol(string(text))
	if err != nil {
		return err
	}
	*p = v
	return nil
}
