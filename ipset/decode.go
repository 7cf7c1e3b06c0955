package ipset

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/mdlayher/netlink"

	"github.com/ipvskit/ipvskit/internal/nlattr"
)

// Reply decoding. The decoders accept anything the kernel might send and
// return an error for what they cannot make sense of; they never panic.

var errShort = errors.New("ipset: reply shorter than its nfgenmsg header")

// attrs returns a decoder for the attributes after the nfgenmsg header.
func attrs(data []byte) (nlattr.Decoder, error) {
	if len(data) < 4 {
		return nlattr.Decoder{}, errShort
	}
	return nlattr.NewDecoder(data[4:]), nil
}

// The kernel marks every integer it sends in network order with
// NLA_F_NET_BYTEORDER; one without the flag is in host order.
func netOrder(ad *nlattr.Decoder) bool { return ad.TypeFlags()&nlattr.NetByteOrder != 0 }

func u16(ad *nlattr.Decoder) uint16 {
	if netOrder(ad) {
		return ad.Uint16BE()
	}
	return ad.Uint16()
}

func u32(ad *nlattr.Decoder) uint32 {
	if netOrder(ad) {
		return ad.Uint32BE()
	}
	return ad.Uint32()
}

func u64(ad *nlattr.Decoder) uint64 {
	if netOrder(ad) {
		return ad.Uint64BE()
	}
	return ad.Uint64()
}

// nested runs fn over the current attribute's contents; fn's error, or the
// inner decoder's, becomes ad's.
func nested(ad *nlattr.Decoder, fn func(nad *nlattr.Decoder) error) {
	nad := ad.Nested()
	if err := fn(&nad); err != nil {
		ad.Fail(err)
	}
	if err := nad.Err(); err != nil {
		ad.Fail(err)
	}
}

// protocolReply is the answer to IPSET_CMD_PROTOCOL.
type protocolReply struct{ max, min uint8 }

func decodeProtocol(data []byte) (protocolReply, error) {
	var r protocolReply
	ad, err := attrs(data)
	if err != nil {
		return r, err
	}
	for ad.Next() {
		switch ad.Type() {
		case attrProtocol:
			r.max = ad.Uint8()
		case attrProtocolMin:
			r.min = ad.Uint8()
		}
	}
	if err := ad.Err(); err != nil {
		return r, fmt.Errorf("ipset: decoding protocol reply: %w", err)
	}
	if r.max == 0 {
		return r, errors.New("ipset: protocol reply without a protocol version")
	}
	if r.min == 0 {
		r.min = r.max // kernels before protocol 7 send only the one they speak
	}
	return r, nil
}

// typeReply is the answer to IPSET_CMD_TYPE: the revisions the kernel has.
type typeReply struct{ max, min uint8 }

func decodeType(data []byte) (typeReply, error) {
	var (
		r      typeReply
		gotMax bool
	)
	ad, err := attrs(data)
	if err != nil {
		return r, err
	}
	for ad.Next() {
		switch ad.Type() {
		case attrRevision:
			r.max, gotMax = ad.Uint8(), true
		case attrRevisionMin:
			r.min = ad.Uint8()
		}
	}
	if err := ad.Err(); err != nil {
		return r, fmt.Errorf("ipset: decoding type reply: %w", err)
	}
	if !gotMax || r.min > r.max {
		return r, fmt.Errorf("ipset: type reply without a valid revision range (%d-%d)", r.min, r.max)
	}
	return r, nil
}

// listPart is one message of a LIST dump: a set's header (in the first
// message for that set) and/or some of its members.
type listPart struct {
	name      string
	hasHeader bool
	info      SetInfo
	elems     []rawElem
}

// rawElem is an element as the kernel sent it, before the set type says
// which fields mean what.
type rawElem struct {
	ip, ip2         netip.Addr
	cidr, cidr2     uint8
	hasCIDR         bool
	port            uint16
	hasPort         bool
	proto           uint8
	timeout         uint32
	packets, bytes_ uint64
	comment         string
}

func decodeListPart(data []byte) (listPart, error) {
	var p listPart
	ad, err := attrs(data)
	if err != nil {
		return p, err
	}
	var typeName string
	for ad.Next() {
		switch ad.Type() {
		case attrSetName:
			p.name = ad.String()
		case attrTypeName:
			typeName = ad.String()
			p.hasHeader = true
		case attrFamily:
			p.info.Family = Family(ad.Uint8())
		case attrRevision:
			p.info.Revision = ad.Uint8()
		case attrData:
			nested(&ad, func(nad *nlattr.Decoder) error {
				decodeHeaderData(nad, &p.info)
				return nil
			})
		case attrADT:
			nested(&ad, func(nad *nlattr.Decoder) error {
				for nad.Next() {
					if nad.Type() != attrData {
						continue
					}
					var e rawElem
					nested(nad, func(ead *nlattr.Decoder) error {
						return decodeElem(ead, &e)
					})
					p.elems = append(p.elems, e)
				}
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil {
		return p, fmt.Errorf("ipset: decoding list reply: %w", err)
	}
	if p.name == "" {
		return p, errors.New("ipset: list reply without a set name")
	}
	p.info.Name = p.name
	if p.hasHeader {
		t, err := ParseType(typeName)
		if err != nil {
			// A type this package does not model (list:set, hash:mac, ...).
			t = TypeUnknown
		}
		p.info.Type = t
	}
	return p, nil
}

func decodeHeaderData(ad *nlattr.Decoder, s *SetInfo) {
	for ad.Next() {
		switch ad.Type() {
		case attrHashSize:
			s.HashSize = u32(ad)
		case attrMaxElem:
			s.MaxElem = u32(ad)
		case attrPort:
			s.PortFrom = u16(ad)
		case attrPortTo:
			s.PortTo = u16(ad)
		case attrTimeout:
			s.Timeouts = true
			s.Timeout = time.Duration(u32(ad)) * time.Second
		case attrCADTFlags:
			f := u32(ad)
			s.Counters = f&cadtWithCounters != 0
			s.Comment = f&cadtWithComment != 0
		case attrElements:
			s.Elements = u32(ad)
		case attrRefs:
			s.References = u32(ad)
		case attrMemSize:
			s.MemSize = u32(ad)
		}
	}
}

func decodeAddr(ad *nlattr.Decoder) netip.Addr {
	var a netip.Addr
	nested(ad, func(nad *nlattr.Decoder) error {
		for nad.Next() {
			b := nad.Bytes()
			switch {
			case nad.Type() == attrIPAddrIPv4 && len(b) == 4:
				a = netip.AddrFrom4([4]byte(b))
			case nad.Type() == attrIPAddrIPv6 && len(b) == 16:
				a = netip.AddrFrom16([16]byte(b))
			default:
				return fmt.Errorf("address attribute %d of %d bytes", nad.Type(), len(b))
			}
		}
		return nil
	})
	return a
}

func decodeElem(ad *nlattr.Decoder, e *rawElem) error {
	for ad.Next() {
		switch ad.Type() {
		case attrIP:
			e.ip = decodeAddr(ad)
		case attrIP2:
			e.ip2 = decodeAddr(ad)
		case attrCIDR:
			e.cidr, e.hasCIDR = ad.Uint8(), true
		case attrCIDR2:
			e.cidr2 = ad.Uint8()
		case attrPort:
			e.port, e.hasPort = u16(ad), true
		case attrProto:
			e.proto = ad.Uint8()
		case attrTimeout:
			e.timeout = u32(ad)
		case attrPackets:
			e.packets = u64(ad)
		case attrBytes:
			e.bytes_ = u64(ad)
		case attrComment:
			e.comment = ad.String()
		}
	}
	return nil
}

// entry turns a raw element into an Entry of a set of type t, checking that
// the kernel sent what the type needs.
func (r *rawElem) entry(t Type) (Entry, error) {
	e := Entry{
		Timeout: time.Duration(r.timeout) * time.Second,
		Comment: r.comment,
		Packets: r.packets,
		Bytes:   r.bytes_,
	}
	var err error
	prefix := func(a netip.Addr, bits uint8) netip.Prefix {
		if err != nil {
			return netip.Prefix{}
		}
		if !a.IsValid() || int(bits) > a.BitLen() {
			err = fmt.Errorf("ipset: %s element with address %v/%d", t, a, bits)
			return netip.Prefix{}
		}
		return netip.PrefixFrom(a, int(bits))
	}
	need := func(ok bool, what string) {
		if err == nil && !ok {
			err = fmt.Errorf("ipset: %s element without %s", t, what)
		}
	}
	switch t {
	case BitmapPort:
		need(r.hasPort, "a port")
		e.Port = r.port
		return e, err
	case HashNet, HashNetPort:
		need(r.hasCIDR, "a prefix length")
		e.Net = prefix(r.ip, r.cidr)
	case HashIP, HashIPPort, HashIPPortIP, HashIPPortNet:
		need(r.ip.IsValid(), "an address")
		e.IP = r.ip
	default:
		return e, fmt.Errorf("ipset: elements of type %s are not supported", t)
	}
	if t.hasProto() {
		need(r.hasPort, "a port")
		e.Proto, e.Port = Protocol(r.proto), r.port
	}
	switch t {
	case HashIPPortIP:
		need(r.ip2.IsValid(), "a second address")
		e.IP2 = r.ip2
	case HashIPPortNet:
		e.Net2 = prefix(r.ip2, r.cidr2)
	}
	return e, err
}

// mergeList folds the messages of a LIST dump into one SetInfo per set, in
// the order the kernel listed them. A set's members may span many messages;
// each message after the first names the set again and carries no header.
func mergeList(msgs []netlink.Message) ([]SetInfo, error) {
	var (
		out   []SetInfo
		index = map[string]int{}
	)
	for _, m := range msgs {
		p, err := decodeListPart(m.Data)
		if err != nil {
			return nil, err
		}
		i, ok := index[p.name]
		if !ok {
			if !p.hasHeader {
				return nil, fmt.Errorf("ipset: members of set %q before its header", p.name)
			}
			i = len(out)
			index[p.name] = i
			out = append(out, p.info)
		}
		s := &out[i]
		for _, r := range p.elems {
			e, err := r.entry(s.Type)
			if err != nil {
				return nil, fmt.Errorf("set %s: %w", s.Name, err)
			}
			s.Entries = append(s.Entries, e)
		}
	}
	return out, nil
}
