package ipvs

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// attrs iterates over netlink attributes (struct nlattr) without allocating:
// listing 100,000 destinations decodes over a million attributes, and in an
// emulated VM the allocations of a general decoder cost as much as the
// kernel's work. Errors (truncation, a value of the wrong size) stick: after
// one, next returns false and err says what went wrong.
type attrs struct {
	b   []byte
	typ uint16
	val []byte
	err error
}

var errShortAttr = errors.New("truncated attribute")

func (a *attrs) next() bool {
	if a.err != nil || len(a.b) == 0 {
		return false
	}
	if len(a.b) < 4 {
		a.err = fmt.Errorf("%w: %d bytes left", errShortAttr, len(a.b))
		return false
	}
	n := int(binary.NativeEndian.Uint16(a.b))
	if n < 4 || n > len(a.b) {
		a.err = fmt.Errorf("%w: length %d, %d bytes left", errShortAttr, n, len(a.b))
		return false
	}
	a.typ = binary.NativeEndian.Uint16(a.b[2:]) & 0x3fff // without NLA_F_NESTED, NLA_F_NET_BYTEORDER
	a.val = a.b[4:n]
	a.b = a.b[min((n+3)&^3, len(a.b)):]
	return true
}

func (a *attrs) size(n int) bool {
	if len(a.val) != n {
		a.err = fmt.Errorf("attribute %d: %d bytes, want %d", a.typ, len(a.val), n)
		return false
	}
	return true
}

func (a *attrs) u8() uint8 {
	if !a.size(1) {
		return 0
	}
	return a.val[0]
}

func (a *attrs) u16() uint16 {
	if !a.size(2) {
		return 0
	}
	return binary.NativeEndian.Uint16(a.val)
}

// u16small reads a u16 that holds an AF_ or IPPROTO_ number (Family and
// Protocol are 8 bits wide): a larger value is an error, never truncated.
func (a *attrs) u16small() uint8 {
	v := a.u16()
	if v > 0xff && a.err == nil {
		a.err = fmt.Errorf("attribute %d: value %d, want at most 255", a.typ, v)
	}
	return uint8(v)
}

// be16 reads a network-order 16-bit value (ports).
func (a *attrs) be16() uint16 {
	if !a.size(2) {
		return 0
	}
	return binary.BigEndian.Uint16(a.val)
}

func (a *attrs) u32() uint32 {
	if !a.size(4) {
		return 0
	}
	return binary.NativeEndian.Uint32(a.val)
}

// uint reads a 4- or 8-byte counter.
func (a *attrs) uint() uint64 {
	switch len(a.val) {
	case 4:
		return uint64(binary.NativeEndian.Uint32(a.val))
	case 8:
		return binary.NativeEndian.Uint64(a.val)
	}
	a.err = fmt.Errorf("attribute %d: %d bytes, want 4 or 8", a.typ, len(a.val))
	return 0
}

// str reads a string, up to its terminating NUL.
func (a *attrs) str() string {
	v := a.val
	for i, c := range v {
		if c == 0 {
			v = v[:i]
			break
		}
	}
	return string(v)
}
