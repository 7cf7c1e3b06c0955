package iptables

import (
	"net/netip"
	"strconv"
)

// checkMember checks that m has exactly the fields of s's shape, with values
// of family f.
func checkMember(f Family, s SetName, m Member) error {
	field := s.String() + "[" + m.String() + "]"
	bad := func(sub, v, why string) error {
		return &ValidationError{Field: field + "." + sub, Value: v, Reason: why}
	}
	addr := func(sub string, a netip.Addr) error {
		if !a.IsValid() {
			return bad(sub, "", "missing")
		}
		if !holds(f, a) {
			return bad(sub, a.String(), "not a plain "+f.String()+" address")
		}
		return nil
	}
	shape := s.Shape()
	switch shape {
	case ShapeAddr, ShapeAddrPort, ShapeAddrPortAddr, ShapeAddrPortNet:
		if err := addr("Addr", m.Addr); err != nil {
			return err
		}
	default:
		if m.Addr.IsValid() {
			return bad("Addr", m.Addr.String(), "set "+s.String()+" holds ports only")
		}
	}
	if shape == ShapeAddr {
		if m.Proto != 0 || m.Port != 0 {
			return bad("Port", m.Proto.String()+":"+strconv.Itoa(int(m.Port)), "set "+s.String()+" holds addresses only")
		}
	} else {
		if m.Port == 0 {
			return bad("Port", "0", "must be 1 to 65535")
		}
		if shape == ShapePort {
			if m.Proto != 0 {
				return bad("Proto", m.Proto.String(), "set "+s.String()+" holds ports without protocol")
			}
		} else if !validProto(m.Proto) {
			return bad("Proto", m.Proto.String(), "must be tcp, udp or sctp")
		}
	}
	if (s == NodePortSCTP || s == NodePortLocalSCTP) && m.Proto != SCTP {
		return bad("Proto", m.Proto.String(), "set "+s.String()+" holds sctp ports only")
	}
	if shape == ShapeAddrPortAddr {
		if err := addr("Addr2", m.Addr2); err != nil {
			return err
		}
	} else if m.Addr2.IsValid() {
		return bad("Addr2", m.Addr2.String(), "set "+s.String()+" has no second address")
	}
	if shape == ShapeAddrPortNet {
		if err := checkPrefix(field+".Net", f, m.Net); err != nil {
			return err
		}
	} else if m.Net.IsValid() {
		return bad("Net", m.Net.String(), "set "+s.String()+" has no network")
	}
	return nil
}
