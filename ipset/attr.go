package ipset

import (
	"net/netip"

	"github.com/ipvskit/ipvskit/internal/nlattr"
)

// attrWriter is internal/nlattr's Encoder with ipset's two habits: every
// network-order integer carries NLA_F_NET_BYTEORDER, and an address is a
// nest (Nest sets NLA_F_NESTED). Without the flags the kernel answers only
// IPSET_ERR_PROTOCOL.
type attrWriter struct{ nlattr.Encoder }

// newWriter returns an attrWriter that appends to b.
func newWriter(b []byte) *attrWriter { return &attrWriter{*nlattr.NewEncoder(b)} }

func (w *attrWriter) be16(typ uint16, v uint16) { w.Uint16BE(typ|nlattr.NetByteOrder, v) }

func (w *attrWriter) be32(typ uint16, v uint32) { w.Uint32BE(typ|nlattr.NetByteOrder, v) }

func (w *attrWriter) be64(typ uint16, v uint64) { w.Uint64BE(typ|nlattr.NetByteOrder, v) }

// addr writes a nested IP address attribute (IPSET_ATTR_IP, IP2).
func (w *attrWriter) addr(typ uint16, a netip.Addr) {
	n := w.Nest(typ)
	if a.Is4() {
		w.Addr(attrIPAddrIPv4|nlattr.NetByteOrder, a)
	} else {
		w.Addr(attrIPAddrIPv6|nlattr.NetByteOrder, a)
	}
	w.End(n)
}
