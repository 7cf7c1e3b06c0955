package ipvs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"time"
)

// This file decodes the kernel's replies, following ip_vs_genl_fill_service,
// ip_vs_genl_fill_dest, ip_vs_genl_fill_stats(64), ip_vs_genl_fill_daemon and
// ip_vs_genl_get_cmd in net/netfilter/ipvs/ip_vs_ctl.c. Nothing the kernel
// sends makes a decoder panic: malformed input is an error.

var errMissing = errors.New("attribute missing")

// genlAttrs strips the genetlink header (struct genlmsghdr) of a reply.
func genlAttrs(b []byte) ([]byte, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("decoding reply: %d bytes, shorter than a genetlink header", len(b))
	}
	return b[4:], nil
}

// nested finds the nested attribute typ among the top-level attributes of a
// reply and returns its contents.
func nested(b []byte, typ uint16) ([]byte, error) {
	body, err := genlAttrs(b)
	if err != nil {
		return nil, err
	}
	a := attrs{b: body}
	var found []byte
	for a.next() {
		if a.typ == typ {
			found = a.val
		}
	}
	if a.err != nil {
		return nil, fmt.Errorf("decoding reply: %w", a.err)
	}
	if found == nil {
		return nil, fmt.Errorf("decoding reply: %w: type %d", errMissing, typ)
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
	a := attrs{b: b}
	for a.next() {
		if len(a.val) != 4 && len(a.val) != 8 {
			continue // IPVS_STATS_ATTR_PAD and anything unknown
		}
		v := a.uint()
		switch a.typ {
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
	return s, a.err
}

// decodeService reads a GET_SERVICE reply (one message of a dump).
func decodeService(b []byte) (ServiceInfo, error) {
	var si ServiceInfo
	nb, err := nested(b, cmdAttrService)
	if err != nil {
		return si, err
	}
	a := attrs{b: nb}
	var (
		addr, netmaskRaw []byte
		flags            uint32
		timeout          uint32
		stats32, stats64 []byte
		haveAF           bool
	)
	s := &si.Service
	for a.next() {
		switch a.typ {
		case svcAttrAF:
			s.Family, haveAF = Family(a.u16small()), true
		case svcAttrProtocol:
			s.Protocol = Protocol(a.u16small())
		case svcAttrAddr:
			addr = a.val
		case svcAttrPort:
			s.Port = a.be16()
		case svcAttrFWMark:
			s.FWMark = a.u32()
		case svcAttrSchedName:
			s.Scheduler = a.str()
		case svcAttrPEName:
			s.PersistenceEngine = a.str()
		case svcAttrFlags:
			if len(a.val) < 4 {
				a.err = fmt.Errorf("flags of %d bytes", len(a.val))
				break
			}
			flags = binary.NativeEndian.Uint32(a.val[:4])
		case svcAttrTimeout:
			timeout = a.u32()
		case svcAttrNetmask:
			netmaskRaw = a.val
		case svcAttrStats:
			stats32 = a.val
		case svcAttrStats64:
			stats64 = a.val
		}
	}
	if a.err != nil {
		return si, fmt.Errorf("decoding service: %w", a.err)
	}
	if !haveAF {
		return si, fmt.Errorf("decoding service: address family %w", errMissing)
	}
	if s.FWMark == 0 {
		if s.Addr, err = decodeAddr(addr, s.Family); err != nil {
			return si, fmt.Errorf("decoding service: %w", err)
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
				return si, fmt.Errorf("decoding service: %w", err)
			}
			if int(pl) != s.Family.Bits() {
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
		return si, fmt.Errorf("decoding service stats: %w", err)
	}
	return si, nil
}
