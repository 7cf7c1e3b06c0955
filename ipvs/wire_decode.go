package ipvs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// This file decodes the kernel's replies, following ip_vs_genl_fill_service,
// ip_vs_genl_fill_dest, ip_vs_genl_fill_stats(64), ip_vs_genl_fill_daemon and
// ip_vs_genl_get_cmd in net/netfilter/ipvs/ip_vs_ctl.c. Nothing the kernel
// sends makes a decoder panic: malformed input is an error.

var errMissing = errors.New("attribute missing")

// genlAttrs strips the genetlink header of a reply.
func genlAttrs(b []byte) ([]byte, error) {
	var m genetlink.Message
	if err := m.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("ipvs: decoding reply: %w", err)
	}
	return m.Data, nil
}

// nested finds the nested attribute typ among the top-level attributes of a
// reply and returns its contents.
func nested(b []byte, typ uint16) ([]byte, error) {
	attrs, err := genlAttrs(b)
	if err != nil {
		return nil, err
	}
	ad, err := netlink.NewAttributeDecoder(attrs)
	if err != nil {
		return nil, err
	}
	var found []byte
	for ad.Next() {
		if ad.Type() == typ {
			found = ad.Bytes()
		}
	}
	if err := ad.Err(); err != nil {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("ipvs: decoding reply: %w: type %d", errMissing, typ)
	}
	return found, nil
}

func decodeAddr(b []byte, f Family) (netip.Addr, error) {
	switch {
	case f == IPv4 && len(b) >= 4:
		return netip.AddrFrom4([4]byte(b[:4])), nil
	case f == IPv6 && len(b) >= 16:
		return netip.AddrFrom16([16]byte(b[:16])), nil
	}
	return netip.Addr{}, fmt.Errorf("address of %d bytes for %v", len(b), f)
}

func decodeBE16(b []byte) (uint16, error) {
	if len(b) != 2 {
		return 0, fmt.Errorf("port of %d bytes", len(b))
	}
	return binary.BigEndian.Uint16(b), nil
}

// prefixLen is the inverse of netmask.
func prefixLen(f Family, b []byte) (uint8, error) {
	if len(b) != 4 {
		return 0, fmt.Errorf("netmask of %d bytes", len(b))
	}
	if f == IPv6 {
		return uint8(min(binary.NativeEndian.Uint32(b), 128)), nil
	}
	return uint8(bits.LeadingZeros32(^binary.BigEndian.Uint32(b))), nil
}

// decodeStats reads a STATS or STATS64 nest; every value may be 4 or 8 bytes.
func decodeStats(b []byte) (Stats, error) {
	var s Stats
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return s, err
	}
	for ad.Next() {
		var v uint64
		switch raw := ad.Bytes(); len(raw) {
		case 4:
			v = uint64(binary.NativeEndian.Uint32(raw))
		case 8:
			v = binary.NativeEndian.Uint64(raw)
		default:
			continue // IPVS_STATS_ATTR_PAD and anything unknown
		}
		switch ad.Type() {
		case statsAttrConns:
			s.Connections = v
		case statsAttrInPkts:
			s.PacketsIn = v
		case statsAttrOutPkts:
			s.PacketsOut = v
		case statsAttrInBytes:
			s.BytesIn = v
		case statsAttrOutBytes:
			s.BytesOut = v
		case statsAttrCPS:
			s.CPS = v
		case statsAttrInPPS:
			s.PPSIn = v
		case statsAttrOutPPS:
			s.PPSOut = v
		case statsAttrInBPS:
			s.BPSIn = v
		case statsAttrOutBPS:
			s.BPSOut = v
		}
	}
	return s, ad.Err()
}

// decodeService reads a GET_SERVICE reply (one message of a dump).
func decodeService(b []byte) (ServiceInfo, error) {
	var si ServiceInfo
	nb, err := nested(b, cmdAttrService)
	if err != nil {
		return si, err
	}
	ad, err := netlink.NewAttributeDecoder(nb)
	if err != nil {
		return si, err
	}
	var (
		addr, netmaskRaw []byte
		flags            uint32
		timeout          uint32
		stats32, stats64 []byte
		haveAF           bool
	)
	s := &si.Service
	for ad.Next() {
		switch ad.Type() {
		case svcAttrAF:
			s.Family, haveAF = Family(ad.Uint16()), true
		case svcAttrProtocol:
			s.Protocol = Protocol(ad.Uint16())
		case svcAttrAddr:
			addr = ad.Bytes()
		case svcAttrPort:
			s.Port, err = decodeBE16(ad.Bytes())
		case svcAttrFWMark:
			s.FWMark = ad.Uint32()
		case svcAttrSchedName:
			s.Scheduler = ad.String()
		case svcAttrPEName:
			s.PersistenceEngine = ad.String()
		case svcAttrFlags:
			raw := ad.Bytes()
			if len(raw) < 4 {
				err = fmt.Errorf("flags of %d bytes", len(raw))
				break
			}
			flags = binary.NativeEndian.Uint32(raw[:4])
		case svcAttrTimeout:
			timeout = ad.Uint32()
		case svcAttrNetmask:
			netmaskRaw = ad.Bytes()
		case svcAttrStats:
			stats32 = ad.Bytes()
		case svcAttrStats64:
			stats64 = ad.Bytes()
		}
		if err != nil {
			return si, fmt.Errorf("ipvs: decoding service: %w", err)
		}
	}
	if err := ad.Err(); err != nil {
		return si, fmt.Errorf("ipvs: decoding service: %w", err)
	}
	if !haveAF {
		return si, fmt.Errorf("ipvs: decoding service: address family %w", errMissing)
	}
	if s.FWMark == 0 {
		if s.Addr, err = decodeAddr(addr, s.Family); err != nil {
			return si, fmt.Errorf("ipvs: decoding service: %w", err)
		}
	} else {
		s.Protocol = 0 // the kernel keeps TCP internally for fwmark services
	}
	s.SchedFlags = SchedFlags(flags) & allSchedFlags
	s.OnePacket = flags&svcFlagOnePacket != 0
	if flags&svcFlagPersistent != 0 {
		s.Persistence.Timeout = time.Duration(timeout) * time.Second
		if netmaskRaw != nil {
			pl, err := prefixLen(s.Family, netmaskRaw)
			if err != nil {
				return si, fmt.Errorf("ipvs: decoding service: %w", err)
			}
			if int(pl) != s.Family.bits() {
				s.Persistence.PrefixLen = pl
			}
		}
	}
	if stats64 != nil {
		si.Stats, err = decodeStats(stats64)
	} else if stats32 != nil {
		si.Stats, err = decodeStats(stats32)
	}
	if err != nil {
		return si, fmt.Errorf("ipvs: decoding service stats: %w", err)
	}
	return si, nil
}
