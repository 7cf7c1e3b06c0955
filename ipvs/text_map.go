package ipvs

import (
	"cmp"
	"fmt"
	"math/bits"
	"net/netip"
	"time"

	"github.com/ipvskit/ipvskit/inet"
)

// This file maps ipvsadm text lines to and from Service and Destination.

// serviceLine is the line of command cmd ('A', 'E' or 'D') for s.
func serviceLine(cmd byte, s Service) (*textLine, error) {
	l := &textLine{cmd: cmd, sched: s.Scheduler, pe: s.PersistenceEngine, ops: s.OnePacket}
	fam := s.Key().Family
	if s.FWMark != 0 {
		l.fwmark, l.ipv6 = s.FWMark, fam == IPv6
	} else {
		switch s.Protocol {
		case TCP, UDP, SCTP:
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
	if fam == IPv6 {
		full = 128
	}
	if p := s.Persistence; p.Timeout > 0 {
		l.persistent = true
		l.timeout = uint32(p.Timeout / time.Second)
		plen := p.PrefixLen
		if plen == 0 || plen > full {
			plen = full
		}
		if fam == IPv6 {
			l.netmask = uint32(plen)
		} else {
			l.netmask = ^uint32(0) << (32 - plen)
		}
	} else if fam == IPv6 {
		l.netmask = 128
	} else {
		l.netmask = 0xffffffff
	}
	return l, nil
}

// destLine is the line of command cmd ('a', 'e' or 'd') for d in s.
func destLine(cmd byte, s Service, d Destination) (*textLine, error) {
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
	case Masq:
		l.fwd = 'm'
	case Route, Local: // ipvsadm prints -g for both; the kernel decides local
		l.fwd = 'g'
	case Tunnel:
		l.fwd = 'i'
		switch d.TunnelType {
		case IPIP:
			l.tunType = "ipip"
		case GUE:
			l.tunType, l.tunPort = "gue", d.TunnelPort
		case GRE:
			l.tunType = "gre"
		default:
			return nil, fmt.Errorf("ipvs text: destination %v of %v: tunnel type %v has no ipvsadm form", d, s, d.TunnelType)
		}
		if d.TunnelType != IPIP {
			switch d.TunnelFlags {
			case TunnelNoCsum:
				l.tunCsum = "nocsum"
			case TunnelCsum:
				l.tunCsum = "csum"
			case TunnelRemCsum:
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

// service is the Service a parsed line names (all of it for 'A' and 'E').
func (l *textLine) service() (Service, *TextError) {
	var s Service
	if l.fwmark != 0 {
		s.FWMark, s.Family = l.fwmark, IPv4
		if l.ipv6 {
			s.Family = IPv6
		}
	} else {
		s.Protocol, s.Addr, s.Port, s.Family = Protocol(l.proto), l.addr, l.port, inet.FamilyOf(l.addr)
	}
	if l.cmd != 'A' && l.cmd != 'E' {
		return s, nil
	}
	s.Scheduler = l.sched
	s.SchedFlags = SchedFlags(l.schedFlags)
	s.OnePacket = l.ops
	s.PersistenceEngine = l.pe
	if l.persistent {
		s.Persistence.Timeout = time.Duration(l.timeout) * time.Second
		if s.Family == IPv6 {
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
func (l *textLine) destination() Destination {
	d := Destination{Addr: l.daddr, Port: l.dport, Family: inet.FamilyOf(l.daddr)}
	if l.cmd == 'd' {
		return d
	}
	switch l.fwd {
	case 'm':
		d.Forward = Masq
	case 'i':
		d.Forward = Tunnel
	default:
		d.Forward = Route
	}
	d.Weight = uint32(l.weight)
	d.UpperThreshold, d.LowerThreshold = l.uthresh, l.lthresh
	switch l.tunType {
	case "gue":
		d.TunnelType, d.TunnelPort = GUE, l.tunPort
	case "gre":
		d.TunnelType = GRE
	}
	switch l.tunCsum {
	case "csum":
		d.TunnelFlags = TunnelCsum
	case "remcsum":
		d.TunnelFlags = TunnelRemCsum
	}
	return d
}

// compareServicesText orders services as ipvsadm -S lists them: address
// services before firewall-mark ones (by mark), then IPv4 before IPv6, then
// TCP, UDP, SCTP, then address and port. (ipvsadm compares addresses by
// subtracting them as 32-bit ints, which misorders addresses more than 2^31
// apart; this is the order it means.)
func compareServicesText(a, b Service) int {
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
func compareDestinationsText(a, b Destination) int {
	return cmp.Or(a.Addr.Compare(b.Addr), cmp.Compare(a.Port, b.Port))
}
