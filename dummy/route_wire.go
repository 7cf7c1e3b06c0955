package dummy

import (
	"net/netip"

	"github.com/ipvskit/ipvskit/internal/nlattr"
)

// Linux's values (include/uapi/linux/rtnetlink.h, socket.h), spelled out so
// that the encoding and its tests build and run on every GOOS.
const (
	afInet       = 2
	afInet6      = 10
	rtmNewRoute  = 24
	rtmDelRoute  = 25
	rtmGetRoute  = 26
	rtnLocal     = 2
	rtScopeHost  = 254
	rtTableLocal = 255
	rtaDst       = 1
	rtaOif       = 4
	rtaTable     = 15
	rtmsgLen     = 12 // struct rtmsg
)

// route is a route as the kernel reports it, the fields that decide
// whether it is one of the Client's.
type route struct {
	dst      netip.Prefix
	table    uint32
	protocol uint8
	scope    uint8
	typ      uint8
	oif      uint32
}

// routeMessage is the body of an RTM_NEWROUTE or RTM_DELROUTE request for
// a as a local host route on link index, marked with RouteProtocol: struct
// rtmsg, then RTA_DST, RTA_OIF and RTA_TABLE. A removal carries the same
// fields, which the kernel matches, so it removes only this route.
func routeMessage(index int, a netip.Addr) []byte {
	fam := byte(afInet)
	if a.Is6() {
		fam = afInet6
	}
	raw := a.AsSlice()
	b := make([]byte, rtmsgLen, rtmsgLen+4+16+8+8)
	// family, dst_len, src_len, tos, table, protocol, scope, type; flags 0
	b[0], b[1], b[4], b[5], b[6], b[7] = fam, byte(a.BitLen()), rtTableLocal, RouteProtocol, rtScopeHost, rtnLocal
	e := nlattr.NewEncoder(b)
	e.Attr(rtaDst, raw)
	e.Uint32(rtaOif, uint32(index))
	e.Uint32(rtaTable, rtTableLocal)
	return e.Bytes()
}

// routeDumpRequest is the body of an RTM_GETROUTE dump of family fam.
func routeDumpRequest(fam byte) []byte {
	b := make([]byte, rtmsgLen)
	b[0] = fam
	return b
}

// parseRoute decodes the body of an RTM_NEWROUTE message. ok is false for
// a message too short or malformed (an attribute cut short, or bytes after
// the last one that are no attribute), or a family other than IPv4 and IPv6;
// a route without RTA_DST (a default route) has an invalid dst.
func parseRoute(b []byte) (r route, ok bool) {
	if len(b) < rtmsgLen {
		return route{}, false
	}
	fam, dstLen := b[0], int(b[1])
	if fam != afInet && fam != afInet6 {
		return route{}, false
	}
	r.table, r.protocol, r.scope, r.typ = uint32(b[4]), b[5], b[6], b[7]
	d := nlattr.NewDecoder(b[rtmsgLen:])
	for d.Next() {
		v := d.Bytes()
		switch d.Type() {
		case rtaDst:
			a, aok := netip.AddrFromSlice(v)
			if !aok || (fam == afInet) != a.Is4() || dstLen > a.BitLen() {
				return route{}, false
			}
			r.dst = netip.PrefixFrom(a, dstLen)
		case rtaOif:
			if len(v) == 4 {
				r.oif = d.Uint32()
			}
		case rtaTable:
			if len(v) == 4 {
				r.table = d.Uint32()
			}
		}
	}
	if d.Err() != nil {
		return route{}, false
	}
	return r, true
}

// ours reports whether r is a VIP route of the Client's on link index:
// protocol, type, table and device all as UpdateRoutes makes them, and a
// host route.
func (r route) ours(index int) bool {
	return r.protocol == RouteProtocol && r.typ == rtnLocal && r.table == rtTableLocal &&
		r.oif == uint32(index) && r.dst.IsValid() && r.dst.Bits() == r.dst.Addr().BitLen()
}
