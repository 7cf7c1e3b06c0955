package nlattr

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrTruncated is the error of a Decoder whose input ends inside an
// attribute, or whose attribute claims a length it does not have.
var ErrTruncated = errors.New("truncated attribute")

// Decoder walks the netlink attributes of a buffer in place, without
// allocating; values alias the buffer. The first error sticks: after it,
// Next returns false and Err reports it. A Decoder is a value: copy one to
// read the same attributes twice.
type Decoder struct {
	b   []byte
	typ uint16
	raw []byte // the current attribute, header and value
	err error
}

// NewDecoder returns a Decoder over the attributes in b.
func NewDecoder(b []byte) Decoder { return Decoder{b: b} }

// Next moves to the next attribute. It returns false at the end of the
// input or after an error.
func (d *Decoder) Next() bool {
	if d.err != nil || len(d.b) == 0 {
		return false
	}
	if len(d.b) < headerLen {
		d.err = fmt.Errorf("%w: %d bytes left", ErrTruncated, len(d.b))
		return false
	}
	n := int(binary.NativeEndian.Uint16(d.b))
	if n < headerLen || n > len(d.b) {
		d.err = fmt.Errorf("%w: length %d, %d bytes left", ErrTruncated, n, len(d.b))
		return false
	}
	d.typ = binary.NativeEndian.Uint16(d.b[2:])
	d.raw = d.b[:n]
	d.b = d.b[min(align4(n), len(d.b)):] // the last attribute's padding may be missing
	return true
}

// Err returns the first error the Decoder met, or nil.
func (d *Decoder) Err() error { return d.err }

// Fail records err as the Decoder's error unless it has one already; a
// caller's check of a value stops the walk like the Decoder's own.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// Type is the current attribute's type without NLA_F_NESTED and
// NLA_F_NET_BYTEORDER.
func (d *Decoder) Type() uint16 { return d.typ & typeMask }

// TypeFlags is the current attribute's NLA_F_NESTED and NLA_F_NET_BYTEORDER.
func (d *Decoder) TypeFlags() uint16 { return d.typ &^ typeMask }

// Bytes is the current attribute's value, aliasing the input.
func (d *Decoder) Bytes() []byte { return d.raw[headerLen:] }

// Raw is the whole current attribute, header and value (without padding),
// aliasing the input: for copying it into a request unchanged.
func (d *Decoder) Raw() []byte { return d.raw }

// Nested returns a Decoder over the current attribute's value.
func (d *Decoder) Nested() Decoder { return NewDecoder(d.Bytes()) }

// value reads the current value with get if it has n bytes; otherwise it
// records the size error and returns 0.
func value[T uint8 | uint16 | uint32 | uint64](d *Decoder, n int, get func([]byte) T) T {
	v := d.Bytes()
	if len(v) != n {
		d.Fail(fmt.Errorf("attribute %d: %d bytes, want %d", d.Type(), len(v), n))
		return 0
	}
	return get(v)
}

func first(b []byte) uint8 { return b[0] }

// Uint8 reads a one-byte value.
func (d *Decoder) Uint8() uint8 { return value(d, 1, first) }

// Uint16 reads a host-order u16.
func (d *Decoder) Uint16() uint16 { return value(d, 2, binary.NativeEndian.Uint16) }

// Uint16BE reads a network-order u16.
func (d *Decoder) Uint16BE() uint16 { return value(d, 2, binary.BigEndian.Uint16) }

// Uint32 reads a host-order u32.
func (d *Decoder) Uint32() uint32 { return value(d, 4, binary.NativeEndian.Uint32) }

// Uint32BE reads a network-order u32.
func (d *Decoder) Uint32BE() uint32 { return value(d, 4, binary.BigEndian.Uint32) }

// Uint64 reads a host-order u64.
func (d *Decoder) Uint64() uint64 { return value(d, 8, binary.NativeEndian.Uint64) }

// Uint64BE reads a network-order u64.
func (d *Decoder) Uint64BE() uint64 { return value(d, 8, binary.BigEndian.Uint64) }

// Counter reads a host-order counter of 4 or 8 bytes, as the kernel sends
// statistics.
func (d *Decoder) Counter() uint64 {
	v := d.Bytes()
	switch len(v) {
	case 4:
		return uint64(binary.NativeEndian.Uint32(v))
	case 8:
		return binary.NativeEndian.Uint64(v)
	}
	d.Fail(fmt.Errorf("attribute %d: %d bytes, want 4 or 8", d.Type(), len(v)))
	return 0
}

// String reads a string up to its terminating NUL (or the whole value if
// it has none).
func (d *Decoder) String() string {
	v := d.Bytes()
	for i, c := range v {
		if c == 0 {
			return string(v[:i])
		}
	}
	return string(v)
}
