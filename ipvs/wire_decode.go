package ipvs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"time"

	"github.com/ipvskit/ipvskit/internal/nlattr"
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
	a := nlattr.NewDecoder(body)
	var found []byte
	for a.Next() {
		if a.Type() == typ {
			found = a.Bytes()
		}
	}
	if a.Err() != nil {
		return nil, fmt.Errorf("decoding reply: %w", a.Err())
	}
	if found == nil {
		return nil, fmt.Errorf("decoding reply: %w: type %d", errMissing, typ)
	}
	return found, nil
}

// u16small reads a u16 that holds an AF_ or IPPROTO_ number (Family and
// Protocol are 8 bits wide): a larger value is an error, never truncated.
func u16small(a *nlattr.Decoder) uint8 {
	v := a.Uint16()
	if v > 0xff {
		a.Fail(fmt.Errorf("attribute %d: value %d, want at most 255", a.Type(), v))
	}
	return uint8(v)
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
	a := nlattr.NewDecoder(b)
	for a.Next() {
		if len(a.Bytes()) != 4 && len(a.Bytes()) != 8 {
			continue // IPVS_STATS_ATTR_PAD and anything unknown
		}
		v := a.Counter()
		switch a.Type() {
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
	return s, a.Err()
}

// decodeService reads a GET_SERVICE reply (one message of a dump).
func decodeService(b []byte) (ServiceInfo, error) {
	var si ServiceInfo
	nb, err := nested(b, cmdAttrService)
	if err != nil {
		return si, err
	}
	s := &si.Service
	r, err := serviceAttrs(nb, s)
	if err != nil {
		return si, fmt.Errorf("decoding service: %w", err)
	}
	if !r.haveAF {
		return si, fmt.Errorf("decoding service: address family %w", errMissing)
	}
	if s.FWMark == 0 {
		if s.Addr, err = decodeAddr(r.addr, s.Family); err != nil {
			return si, fmt.Errorf("decoding service: %w", err)
		}
	} else {
		s.Protocol = 0 // the kernel keeps TCP internally for fwmark services
	}
	if err := r.setFlags(s); err != nil {
		return si, fmt.Errorf("decoding service: %w", err)
	}
	if si.Stats, err = pickStats(r.stats64, r.stats32); err != nil {
		return si, fmt.Errorf("decoding service stats: %w", err)
	}
	return si, nil
}

// rawService is what decodeService needs of a service's attributes
// beyond the fields serviceAttrs sets directly.
type rawService struct {
	addr, netmask    []byte
	flags, timeout   uint32
	stats32, stats64 []byte
	haveAF           bool
}

// serviceAttrs walks the attributes of a service nest, setting the fields
// of s that need nothing else and keeping the rest in a rawService.
func serviceAttrs(b []byte, s *Service) (rawService, error) {
	var r rawService
	a := nlattr.NewDecoder(b)
	for a.Next() {
		switch a.Type() {
		case svcAttrAF:
			s.Family, r.haveAF = Family(u16small(&a)), true
		case svcAttrProtocol:
			s.Protocol = Protocol(u16small(&a))
		case svcAttrAddr:
			r.addr = a.Bytes()
		case svcAttrPort:
			s.Port = a.Uint16BE()
		case svcAttrFWMark:
			s.FWMark = a.Uint32()
		case svcAttrSchedName:
			s.Scheduler = a.String()
		case svcAttrPEName:
			s.PersistenceEngine = a.String()
		case svcAttrFlags:
			if len(a.Bytes()) < 4 {
				a.Fail(fmt.Errorf("flags of %d bytes", len(a.Bytes())))
				break
			}
			r.flags = binary.NativeEndian.Uint32(a.Bytes()[:4])
		case svcAttrTimeout:
			r.timeout = a.Uint32()
		case svcAttrNetmask:
			r.netmask = a.Bytes()
		case svcAttrStats:
			r.stats32 = a.Bytes()
		case svcAttrStats64:
			r.stats64 = a.Bytes()
		}
	}
	return r, a.Err()
}

// setFlags sets the scheduler flags, one-packet scheduling and persistence
// of s (whose Family is known) from the flag word, timeout and netmask.
func (r *rawService) setFlags(s *Service) error {
	s.SchedFlags = SchedFlags(r.flags) & allSchedFlags
	s.OnePacket = r.flags&svcFlagOnePacket != 0
	if r.flags&svcFlagPersistent == 0 {
		return nil
	}
	s.Persistence.Timeout = time.Duration(r.timeout) * time.Second
	if r.netmask == nil {
		return nil
	}
	pl, err := prefixLen(s.Family, r.netmask)
	if err != nil {
		return err
	}
	if int(pl) != s.Family.Bits() {
		s.Persistence.PrefixLen = pl
	}
	return nil
}

// pickStats decodes the 64-bit statistics if the kernel sent them, else
// the 32-bit ones, else none.
func pickStats(stats64, stats32 []byte) (Stats, error) {
	switch {
	case stats64 != nil:
		return decodeStats(stats64)
	case stats32 != nil:
		return decodeStats(stats32)
	}
	return Stats{}, nil
}
