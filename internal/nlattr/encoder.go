package nlattr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// Flags of an attribute's type field (include/uapi/linux/netlink.h).
const (
	Nested       uint16 = 0x8000 // NLA_F_NESTED
	NetByteOrder uint16 = 0x4000 // NLA_F_NET_BYTEORDER
	typeMask            = ^(Nested | NetByteOrder)
)

const (
	headerLen = 4      // sizeof(struct nlattr)
	maxLen    = 0xffff // nla_len is a u16
)

// ErrTooLong is the error of an Encoder whose attribute or nest outgrew the
// 65,535 bytes that nla_len can say.
var ErrTooLong = errors.New("netlink attribute longer than 65535 bytes")

func align4(n int) int { return (n + 3) &^ 3 }

// Encoder appends netlink attributes to a buffer. The zero value is ready
// to use with an empty buffer; NewEncoder starts after a header (struct
// genlmsghdr, nfgenmsg, rtmsg, ...) the caller wrote.
type Encoder struct {
	b   []byte
	err error
}

// NewEncoder returns an Encoder that appends to b.
func NewEncoder(b []byte) *Encoder { return &Encoder{b: b} }

// Bytes returns the encoded buffer.
func (e *Encoder) Bytes() []byte { return e.b }

// Err returns the first error: ErrTooLong, or nil.
func (e *Encoder) Err() error { return e.err }

func (e *Encoder) header(typ uint16, n int) {
	if n+headerLen > maxLen && e.err == nil {
		e.err = fmt.Errorf("%w: type %d, %d bytes", ErrTooLong, typ&typeMask, n+headerLen)
	}
	e.b = binary.NativeEndian.AppendUint16(e.b, uint16(headerLen+n))
	e.b = binary.NativeEndian.AppendUint16(e.b, typ)
}

func (e *Encoder) pad() {
	for len(e.b)%4 != 0 {
		e.b = append(e.b, 0)
	}
}

// Attr appends an attribute with value v.
func (e *Encoder) Attr(typ uint16, v []byte) {
	e.header(typ, len(v))
	e.b = append(e.b, v...)
	e.pad()
}

// Raw appends a whole attribute, header and value, as Decoder.Raw returns
// it (nothing if attr is empty), padded to 4 bytes.
func (e *Encoder) Raw(attr []byte) {
	e.b = append(e.b, attr...)
	e.pad()
}

// Uint8 appends a one-byte value (padded to 4).
func (e *Encoder) Uint8(typ uint16, v uint8) {
	e.header(typ, 1)
	e.b = append(e.b, v, 0, 0, 0)
}

// Uint16 appends a host-order u16 (padded to 4).
func (e *Encoder) Uint16(typ uint16, v uint16) {
	e.header(typ, 2)
	e.b = binary.NativeEndian.AppendUint16(e.b, v)
	e.b = append(e.b, 0, 0)
}

// Uint16BE appends a network-order u16 (padded to 4). Flags, such as
// NetByteOrder, are the caller's to put in typ.
func (e *Encoder) Uint16BE(typ uint16, v uint16) {
	e.header(typ, 2)
	e.b = binary.BigEndian.AppendUint16(e.b, v)
	e.b = append(e.b, 0, 0)
}

// Uint32 appends a host-order u32.
func (e *Encoder) Uint32(typ uint16, v uint32) {
	e.header(typ, 4)
	e.b = binary.NativeEndian.AppendUint32(e.b, v)
}

// Uint32BE appends a network-order u32.
func (e *Encoder) Uint32BE(typ uint16, v uint32) {
	e.header(typ, 4)
	e.b = binary.BigEndian.AppendUint32(e.b, v)
}

// Uint64BE appends a network-order u64.
func (e *Encoder) Uint64BE(typ uint16, v uint64) {
	e.header(typ, 8)
	e.b = binary.BigEndian.AppendUint64(e.b, v)
}

// String appends s with its terminating NUL (NLA_NUL_STRING).
func (e *Encoder) String(typ uint16, s string) {
	e.header(typ, len(s)+1)
	e.b = append(e.b, s...)
	e.b = append(e.b, 0)
	e.pad()
}

// Addr appends an address as its raw bytes: 4 for IPv4, 16 for IPv6.
func (e *Encoder) Addr(typ uint16, a netip.Addr) {
	if a.Is4() {
		p := a.As4()
		e.Attr(typ, p[:])
		return
	}
	p := a.As16()
	e.Attr(typ, p[:])
}

// Nest opens a nested attribute of type typ|Nested and returns its offset,
// which End takes to close it.
func (e *Encoder) Nest(typ uint16) int {
	off := len(e.b)
	e.header(typ|Nested, 0)
	return off
}

// End closes the nest that Nest opened at off, writing its length.
func (e *Encoder) End(off int) {
	n := len(e.b) - off
	if n > maxLen && e.err == nil {
		e.err = fmt.Errorf("%w: nest of type %d, %d bytes", ErrTooLong, binary.NativeEndian.Uint16(e.b[off+2:])&typeMask, n)
	}
	binary.NativeEndian.PutUint16(e.b[off:], uint16(n))
}
