package ipset

import (
	"fmt"
	"time"

	"github.com/ipvskit/ipvskit/inet"
)

// Kernel defaults and limits for set options.
const (
	// DefaultHashSize is the kernel's initial hash size when Set.HashSize is 0.
	DefaultHashSize = 1024
	// DefaultMaxElem is the kernel's element limit when Set.MaxElem is 0.
	DefaultMaxElem = 65536
	// MaxTimeout is the longest timeout the kernel accepts (UINT_MAX/1000 s,
	// IPSET_MAX_TIMEOUT in ip_set_timeout.h).
	MaxTimeout = 4294967 * time.Second
	// MaxNameLen is the longest set name, in bytes.
	MaxNameLen = maxNameLen - 1
)

// Set describes a set: its identity (Name) and the options it is created
// with. The zero value of each option means the kernel's default.
type Set struct {
	// Name is the set's name: 1 to 31 printable, non-space ASCII bytes.
	Name string
	// Type is the set type; required.
	Type Type
	// Family is inet.IPv4 or inet.IPv6 for hash types; zero means inet.IPv4. It must be
	// zero for bitmap:port.
	Family Family

	// HashSize is the initial number of hash buckets (hash types only); the
	// kernel rounds it up to a power of two and grows it as needed. Zero
	// means DefaultHashSize.
	HashSize uint32
	// MaxElem is the most elements the set holds (hash types only); adds
	// beyond it fail with ErrSetFull. Zero means DefaultMaxElem.
	MaxElem uint32
	// PortFrom and PortTo bound a bitmap:port set (inclusive). Both zero
	// means the whole range 0-65535.
	PortFrom, PortTo uint16

	// Timeouts enables per-entry timeouts (the "timeout" extension).
	// Timeout is the default for entries that do not carry their own;
	// zero means they never expire. A non-zero Timeout implies Timeouts.
	Timeouts bool
	Timeout  time.Duration
	// Counters enables per-entry packet and byte counters.
	Counters bool
	// Comment enables a comment string on each entry.
	Comment bool
}

// SetInfo is what the kernel reports about a set: the Set, with every
// option as the kernel holds it, plus its state.
type SetInfo struct {
	Set
	// Revision is the type revision the set was created with.
	Revision uint8
	// Elements, References and MemSize are the number of entries, the
	// number of kernel references (iptables rules, list:set members) and
	// the memory the set uses, in bytes.
	Elements, References, MemSize uint32
	// Entries holds the members; it is nil when only headers were asked for.
	Entries []Entry
}

// family returns the effective family: inet.IPv4 for a hash set with Family 0.
func (s *Set) family() Family {
	if s.Type.isHash() && s.Family == FamilyUnspec {
		return inet.IPv4
	}
	return s.Family
}

// maxElem returns how many entries the set can hold.
func (s *Set) maxElem() uint32 {
	if s.Type == BitmapPort {
		from, to := s.portRange()
		return uint32(to) - uint32(from) + 1
	}
	if s.MaxElem == 0 {
		return DefaultMaxElem
	}
	return s.MaxElem
}

func (s *Set) portRange() (from, to uint16) {
	if s.PortFrom == 0 && s.PortTo == 0 {
		return 0, 65535
	}
	return s.PortFrom, s.PortTo
}

func (s *Set) hasTimeouts() bool { return s.Timeouts || s.Timeout != 0 }

// Validate checks the set's name and options without talking to the kernel.
// It returns a *ValidationError naming the first bad field.
func (s *Set) Validate() error {
	if err := validateName("Name", s.Name); err != nil {
		return err
	}
	if !s.Type.valid() {
		return &ValidationError{Field: "Type", Value: s.Type.String(), Reason: "not a supported set type"}
	}
	if s.Type.isHash() {
		if f := s.family(); f != inet.IPv4 && f != inet.IPv6 {
			return &ValidationError{Field: "Family", Value: FamilyName(f), Reason: "must be inet or inet6"}
		}
		if s.PortFrom != 0 || s.PortTo != 0 {
			return &ValidationError{Field: "PortFrom", Value: fmt.Sprint(s.PortFrom, "-", s.PortTo), Reason: "only bitmap:port has a port range"}
		}
	} else {
		if s.Family != FamilyUnspec {
			return &ValidationError{Field: "Family", Value: FamilyName(s.Family), Reason: "bitmap:port has no family"}
		}
		if s.HashSize != 0 || s.MaxElem != 0 {
			return &ValidationError{Field: "HashSize", Value: fmt.Sprint(s.HashSize, "/", s.MaxElem), Reason: "bitmap:port has no hashsize or maxelem"}
		}
		if s.PortFrom > s.PortTo {
			return &ValidationError{Field: "PortFrom", Value: fmt.Sprint(s.PortFrom, "-", s.PortTo), Reason: "range start above its end"}
		}
	}
	if s.HashSize > 1<<31 {
		return &ValidationError{Field: "HashSize", Value: fmt.Sprint(s.HashSize), Reason: "above 2^31"}
	}
	if err := validateTimeout("Timeout", s.Timeout); err != nil {
		return err
	}
	return nil
}

func validateName(field, name string) error {
	if name == "" {
		return &ValidationError{Field: field, Value: name, Reason: "empty"}
	}
	if len(name) > MaxNameLen {
		return &ValidationError{Field: field, Value: name, Reason: fmt.Sprintf("longer than %d bytes", MaxNameLen)}
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c > '~' || c == '"' {
			return &ValidationError{Field: field, Value: name, Reason: fmt.Sprintf("byte %q is not printable non-space ASCII", c)}
		}
	}
	return nil
}

func validateTimeout(field string, d time.Duration) error {
	if d < 0 || d > MaxTimeout || d%time.Second != 0 {
		return &ValidationError{Field: field, Value: d.String(), Reason: "must be whole seconds from 0 to MaxTimeout"}
	}
	return nil
}
