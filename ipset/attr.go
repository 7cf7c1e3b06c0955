package ipset

import (
	"encoding/binary"
	"net/netip"
)

// attrWriter appends netlink attributes to a buffer. It is a plain append
// encoder rather than netlink.AttributeEncoder because Replace encodes
// hundreds of thousands of elements, and it sets the two flags the kernel
// insists on: NLA_F_NESTED on every nest and NLA_F_NET_BYTEORDER on every
// big-endian integer (without them ipset answers only IPSET_ERR_PROTOCOL).
type attrWriter struct{ b []byte }

func (w *attrWriter) header(typ uint16, n int) {
	w.b = binary.NativeEndian.AppendUint16(w.b, uint16(4+n))
	w.b = binary.NativeEndian.AppendUint16(w.b, typ)
}

func (w *attrWriter) pad() {
	for len(w.b)%4 != 0 {
		w.b = append(w.b, 0)
	}
}

func (w *attrWriter) bytes(typ uint16, v []byte) {
	w.header(typ, len(v))
	w.b = append(w.b, v...)
	w.pad()
}

func (w *attrWriter) u8(typ uint16, v uint8) { w.bytes(typ, []byte{v}) }

// str writes a NUL-terminated string (NLA_NUL_STRING).
func (w *attrWriter) str(typ uint16, s string) {
	w.header(typ, len(s)+1)
	w.b = append(w.b, s...)
	w.b = append(w.b, 0)
	w.pad()
}

func (w *attrWriter) be16(typ uint16, v uint16) {
	w.header(typ|nlaFNetByteOrder, 2)
	w.b = binary.BigEndian.AppendUint16(w.b, v)
	w.pad()
}

func (w *attrWriter) be32(typ uint16, v uint32) {
	w.header(typ|nlaFNetByteOrder, 4)
	w.b = binary.BigEndian.AppendUint32(w.b, v)
}

func (w *attrWriter) be64(typ uint16, v uint64) {
	w.header(typ|nlaFNetByteOrder, 8)
	w.b = binary.BigEndian.AppendUint64(w.b, v)
}

// u32 writes a host-order u32 (IPSET_ATTR_LINENO).
func (w *attrWriter) u32(typ uint16, v uint32) {
	w.header(typ, 4)
	w.b = binary.NativeEndian.AppendUint32(w.b, v)
}

// addr writes a nested IP address attribute (IPSET_ATTR_IP, IP2).
func (w *attrWriter) addr(typ uint16, a netip.Addr) {
	n := w.begin(typ)
	if a.Is4() {
		b := a.As4()
		w.header(attrIPAddrIPv4|nlaFNetByteOrder, 4)
		w.b = append(w.b, b[:]...)
	} else {
		b := a.As16()
		w.header(attrIPAddrIPv6|nlaFNetByteOrder, 16)
		w.b = append(w.b, b[:]...)
	}
	w.end(n)
}

// begin opens a nested attribute; end closes it, fixing up its length.
func (w *attrWriter) begin(typ uint16) int {
	n := len(w.b)
	w.header(typ|nlaFNested, 0)
	return n
}

func (w *attrWriter) end(n int) {
	binary.NativeEndian.PutUint16(w.b[n:], uint16(len(w.b)-n))
}
