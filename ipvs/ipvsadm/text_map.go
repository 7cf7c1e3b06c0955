package ipvsadm

import (
	"cmp"
	"fmt"
	"math/bits"
	"net/netip"
	"time"

	"github.com/ipvskit/ipvskit/ipvs"

	"github.com/ipvskit/ipvskit/inet"
)

// This file maps ipvsadm text lines to and from ipvs.Service and ipvs.Destination.

// serviceLine is the line of command cmd ('A', 'E' or 'D') for s.
func serviceLine(cmd byte, s ipvs.Service) (*textLine, error) {
	l := &textLine{cmd: cmd, sched: s.Scheduler, pe: s.PersistenceEngine, ops: s.OnePacket}
	fam := s.Key().Family
	if s.FWMark != 0 {
		l.fwmark, l.ipv6 = s.FWMark, fam == ipvs.IPv6
	} else {
		switch s.Protocol {
		case ipvs.TCP, ipvs.UDP, ipvs.SCTP:
		default:
			return nil, fmt.Errorf("ipvs text: service %v: protocol %d has no ipvsadm form", s, s.Protocol)
		}
		if !s.Addr.IsValid() {
			return nil, fmt.Errorf("ipvs text: service %v: no address and no fwmark", s)
		}
		l.proto, l.addr, l.port = uint16(s.Protocol), s.Addr, s.Port
	}
	if cmd == 'D' {
		return l, nil
	}
	if l.sched == "" {
		return nil, fmt.Errorf("ipvs text: service %v: no scheduler", s)
	}
	l.schedFlags = uint32(s.SchedFlags & allSchedFlags)
	full := uint8(32)
	if fam == ipvs.IPv6 {
		full = 128
	}
	if p := s.Persistence; p.Timeout > 0 {
		l.persistent = true
		l.timeout = uint32(p.Timeout / time.Second)
		plen := p.PrefixLen
		if plen == 0 || plen > full {
			plen = full
		}
		if fam == ipvs.IPv6 {
			l.netmask = uint32(plen)
		} else {
			l.netmask = ^uint32(0) << (32 - plen)
		}
	} else if fam == ipvs.IPv6 {
		l.netmask = 128
	} else {
		l.netmask = 0xffffffff
	}
	return l, nil
}

// destLine is the line of command cmd ('a', 'e' or 'd') for d in s.
func destLine(cmd byte, s ipvs.Service, d ipvs.Destination) (*textLine, error) {
	l, err := serviceLine('D', s)
	if err != nil {
		return nil, err
	}
	l.cmd = cmd
	if !d.Addr.IsValid() {
		return nil, fmt.Errorf("ipvs text: service %v: destination without an address", s)
	}
	l.daddr, l.dport = d.Addr, d.Port
	if cmd == 'd' {
		return l, nil
	}
	switch d.Forward {
	case ipvs.Masq:
		l.fwd = 'm'
	case ipvs.DirectRoute, ipvs.LocalNode: // ipvsadm prints -g for both; the kernel decides local
		l.fwd = 'g'
	case ipvs.Tunnel:
		l.fwd = 'i'
		switch d.TunnelType {
		case ipvs.IPIP:
			l.tunType = "ipip"
		case ipvs.GUE:
			l.tunType, l.tunPort = "gue", d.TunnelPort
		case ipvs.GRE:
			l.tunType = "gre"
		default:
			return nil, fmt.Errorf("ipvs text: destination %v of %v: tunnel type %v has no ipvsadm form", d, s, d.TunnelType)
		}
		if d.TunnelType != ipvs.IPIP {
			switch d.TunnelFlags {
			case ipvs.TunnelNoCsum:
				l.tunCsum = "nocsum"
			case ipvs.TunnelCsum:
				l.tunCsum = "csum"
			case ipvs.TunnelRemCsum:
				l.tunCsum = "remcsum"
			default:
				return nil, fmt.Errorf("ipvs text: destination %v of %v: tunnel flags %v have no ipvsadm form", d, s, d.TunnelFlags)
			}
		}
	default:
		return nil, fmt.Errorf("ipvs text: destination %v of %v: forwarding method %v has no ipvsadm form", d, s, d.Forward)
	}
	l.weight, l.hasWeight = int64(d.Weight), true
	l.uthresh, l.lthresh = d.UpperThreshold, d.LowerThreshold
	return l, nil
}

// service is the ipvs.Service a parsed line names (all of it for 'A' and 'E').
func (l *textLine) service() (ipvs.Service, *TextError) {
	var s ipvs.Service
	if l.fwmark != 0 {
		s.FWMark, s.Family = l.fwmark, ipvs.IPv4
		if l.ipv6 {
			s.Family = ipvs.IPv6
		}
	} else {
		s.Protocol, s.Addr, s.Port, s.Family = ipvs.Protocol(l.proto), l.addr, l.port, inet.FamilyOf(l.addr)
	}
	if l.cmd != 'A' && l.cmd != 'E' {
		return s, nil
	}
	s.Scheduler = l.sched
	s.SchedFlags = ipvs.SchedFlags(l.schedFlags)
	s.OnePacket = l.ops
	s.PersistenceEngine = l.pe
	if l.persistent {
		s.Persistence.Timeout = time.Duration(l.timeout) * time.Second
		if s.Family == ipvs.IPv6 {
			if l.netmask != 128 {
				s.Persistence.PrefixLen = uint8(l.netmask)
			}
		} else if l.netmask != 0xffffffff {
			ones := bits.LeadingZeros32(^l.netmask)
			if l.netmask != ^uint32(0)<<(32-ones) || ones == 0 {
				m := l.netmask
				return s, textErr("netmask", netip.AddrFrom4([4]byte{byte(m >> 24), byte(m >> 16), byte(m >> 8), byte(m)}).String(),
					"want a netmask of contiguous ones, from 128.0.0.0 to 255.255.255.255")
			}
			s.Persistence.PrefixLen = uint8(ones)
		}
	}
	return s, nil
}

// destination is the Destination a parsed 'a', 'e' or 'd' line names.
func (l *textLine) destination() ipvs.Destination {
	d := ipvs.Destination{Addr: l.daddr, Port: l.dport, Family: inet.FamilyOf(l.daddr)}
	if l.cmd == 'd' {
		return d
	}
	switch l.fwd {
	case 'm':
		d.Forward = ipvs.Masq
	case 'i':
		d.Forward = ipvs.Tunnel
	default:
		d.Forward = ipvs.DirectRoute
	}
	d.Weight = uint32(l.weight)
	d.UpperThreshold, d.LowerThreshold = l.uthresh, l.lthresh
	switch l.tunType {
	case "gue":
		d.TunnelType, d.TunnelPort = ipvs.GUE, l.tunPort
	case "gre":
		d.TunnelType = ipvs.GRE
	}
	switch l.tunCsum {
	case "csum":
		d.TunnelFlags = ipvs.TunnelCsum
	case "remcsum":
		d.TunnelFlags = ipvs.TunnelRemCsum
	}
	return d
}

// compareServicesText orders services as ipvsadm -S lists them: address
// services before firewall-mark ones (by mark), then IPv4 before IPv6, then
// TCP, UDP, SCTP, then address and port. (ipvsadm compares addresses by
// subtracting them as 32-bit ints, which misorders addresses more than 2^31
// apart; this is the order it means.)
func compareServicesText(a, b ipvs.Service) int {
	ka, kb := a.Key(), b.Key()
	return cmp.Or(
		cmp.Compare(ka.FWMark, kb.FWMark),
		cmp.Compare(ka.Family, kb.Family),
		cmp.Compare(ka.Protocol, kb.Protocol),
		ka.Addr.Compare(kb.Addr),
		cmp.Compare(ka.Port, kb.Port),
	)
}

// compareDestinationsText orders a service's destinations as ipvsadm -S
// lists them: by address, then port.
func compareDestinationsText(a, b ipvs.Destination) int {
	return cmp.Or(a.Addr.Compare(b.Addr), cmp.Compare(a.Port, b.Port))
}

// allSchedFlags are the three flags a scheduler can be given.
const allSchedFlags = ipvs.SchedFlag1 | ipvs.SchedFlag2 | ipvs.SchedFlag3
