package conntrack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/mdlayher/netlink"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/internal/nlattr"
)

// ctnetlink's wire format: include/uapi/linux/netfilter/nfnetlink.h and
// nfnetlink_conntrack.h. A message is a struct nfgenmsg (family, version,
// res_id) and attributes; addresses are raw bytes, ports and ids big endian.
const (
	nfnlSubsysCTNetlink = 1 // NFNL_SUBSYS_CTNETLINK
	nfnetlinkV0         = 0 // NFNETLINK_V0

	msgGet    = 1 // IPCTNL_MSG_CT_GET
	msgDelete = 2 // IPCTNL_MSG_CT_DELETE

	ctaTupleOrig  = 1  // CTA_TUPLE_ORIG
	ctaTupleReply = 2  // CTA_TUPLE_REPLY
	ctaID         = 12 // CTA_ID
	ctaZone       = 18 // CTA_ZONE

	ctaTupleIP    = 1 // CTA_TUPLE_IP
	ctaTupleProto = 2 // CTA_TUPLE_PROTO

	ctaIPv4Src = 1 // CTA_IP_V4_SRC
	ctaIPv4Dst = 2 // CTA_IP_V4_DST
	ctaIPv6Src = 3 // CTA_IP_V6_SRC
	ctaIPv6Dst = 4 // CTA_IP_V6_DST

	ctaProtoNum     = 1 // CTA_PROTO_NUM
	ctaProtoSrcPort = 2 // CTA_PROTO_SRC_PORT
	ctaProtoDstPort = 3 // CTA_PROTO_DST_PORT

	nfgenLen = 4 // sizeof(struct nfgenmsg)
)

var errMalformed = errors.New("malformed ctnetlink message")

func malformed(what string) error { return fmt.Errorf("%w: %s", errMalformed, what) }

func msgType(cmd uint16) netlink.HeaderType {
	return netlink.HeaderType(nfnlSubsysCTNetlink<<8 | cmd)
}

// dumpRequest lists the conntrack table of one family.
func dumpRequest(f Family) netlink.Message {
	return netlink.Message{
		Header: netlink.Header{Type: msgType(msgGet), Flags: netlink.Dump},
		Data:   []byte{byte(f), nfnetlinkV0, 0, 0},
	}
}

// entry is one decoded conntrack entry of a dump, with the attributes that
// identify it to a delete request, each a whole attribute (header and
// value) aliasing the dump's buffer.
type entry struct {
	family   Family
	flow     Flow
	orig     []byte // CTA_TUPLE_ORIG
	id, zone []byte // CTA_ID, CTA_ZONE; nil if absent
}

// deleteRequest deletes e: the kernel looks it up by its original tuple in
// its zone and, since the request carries e's id, deletes it only if it is
// still the same entry (ENOENT otherwise), not a new flow that reuses the
// tuple since the dump. The request copies what it needs of e.
func deleteRequest(e *entry) netlink.Message {
	b := make([]byte, 0, nfgenLen+align4(len(e.orig))+align4(len(e.id))+align4(len(e.zone)))
	w := nlattr.NewEncoder(append(b, byte(e.family), nfnetlinkV0, 0, 0))
	w.Raw(e.orig)
	w.Raw(e.zone)
	w.Raw(e.id)
	return netlink.Message{Header: netlink.Header{Type: msgType(msgDelete)}, Data: w.Bytes()}
}

func align4(n int) int { return (n + 3) &^ 3 }

// forAttrs calls fn with each attribute of b: its type without flags, its
// value and the whole attribute. The walk is internal/nlattr's; a
// truncated attribute is errMalformed.
func forAttrs(b []byte, fn func(typ uint16, v, raw []byte) error) error {
	d := nlattr.NewDecoder(b)
	for d.Next() {
		if err := fn(d.Type(), d.Bytes(), d.Raw()); err != nil {
			return err
		}
	}
	if err := d.Err(); err != nil {
		return fmt.Errorf("%w: %w", errMalformed, err)
	}
	return nil
}

// decodeEntry decodes one message of a conntrack dump.
func decodeEntry(data []byte) (entry, error) {
	var e entry
	if len(data) < nfgenLen {
		return e, malformed("no nfgenmsg")
	}
	e.family = Family(data[0])
	var haveOrig, haveReply bool
	err := forAttrs(data[nfgenLen:], func(typ uint16, v, raw []byte) error {
		var err error
		switch typ {
		case ctaTupleOrig:
			e.orig, haveOrig = raw, true
			e.flow.Original, e.flow.Protocol, err = decodeTuple(v)
		case ctaTupleReply:
			haveReply = true
			e.flow.Reply, _, err = decodeTuple(v)
		case ctaID:
			if len(v) != 4 {
				return malformed("CTA_ID of " + itoa(len(v)) + " bytes")
			}
			e.id = raw
		case ctaZone:
			if len(v) != 2 {
				return malformed("CTA_ZONE of " + itoa(len(v)) + " bytes")
			}
			e.zone = raw
		}
		return err
	})
	switch {
	case err != nil:
		return e, err
	case !haveOrig || !haveReply:
		return e, malformed("entry without both tuples")
	case inet.FamilyOf(e.flow.Original.Dst.Addr()) != e.family:
		return e, malformed(fmt.Sprintf("%v entry in a message of family %v", e.flow.Original.Dst.Addr(), e.family))
	}
	return e, nil
}

// decodeTuple decodes the value of CTA_TUPLE_ORIG or CTA_TUPLE_REPLY. A
// protocol without ports (ICMP) leaves them 0.
func decodeTuple(b []byte) (Tuple, Protocol, error) {
	var (
		src, dst         netip.Addr
		sport, dport     uint16
		proto            Protocol
		haveIP, haveProt bool
	)
	err := forAttrs(b, func(typ uint16, v, _ []byte) error {
		switch typ {
		case ctaTupleIP:
			haveIP = true
			return forAttrs(v, func(typ uint16, v, _ []byte) error {
				var a netip.Addr
				switch typ {
				case ctaIPv4Src, ctaIPv4Dst:
					if len(v) != 4 {
						return malformed("IPv4 address of " + itoa(len(v)) + " bytes")
					}
					a = netip.AddrFrom4([4]byte(v))
				case ctaIPv6Src, ctaIPv6Dst:
					if len(v) != 16 {
						return malformed("IPv6 address of " + itoa(len(v)) + " bytes")
					}
					a = netip.AddrFrom16([16]byte(v))
				default:
					return nil
				}
				if typ == ctaIPv4Src || typ == ctaIPv6Src {
					src = a
				} else {
					dst = a
				}
				return nil
			})
		case ctaTupleProto:
			haveProt = true
			return forAttrs(v, func(typ uint16, v, _ []byte) error {
				switch typ {
				case ctaProtoNum:
					if len(v) != 1 {
						return malformed("CTA_PROTO_NUM of " + itoa(len(v)) + " bytes")
					}
					proto = Protocol(v[0])
				case ctaProtoSrcPort, ctaProtoDstPort:
					if len(v) != 2 {
						return malformed("port of " + itoa(len(v)) + " bytes")
					}
					if typ == ctaProtoSrcPort {
						sport = binary.BigEndian.Uint16(v)
					} else {
						dport = binary.BigEndian.Uint16(v)
					}
				}
				return nil
			})
		}
		return nil
	})
	switch {
	case err != nil:
		return Tuple{}, 0, err
	case !haveIP || !haveProt || !src.IsValid() || !dst.IsValid():
		return Tuple{}, 0, malformed("tuple without addresses or protocol")
	case src.Is4() != dst.Is4():
		return Tuple{}, 0, malformed("tuple with addresses of two families")
	}
	return Tuple{Src: netip.AddrPortFrom(src, sport), Dst: netip.AddrPortFrom(dst, dport)}, proto, nil
}
