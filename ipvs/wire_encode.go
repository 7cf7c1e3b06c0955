package ipvs

import (
	"encoding/binary"
	"net/netip"
	"time"
)

// This file builds the generic netlink payloads (genetlink header and
// attributes) of every IPVS request. The layouts follow
// include/uapi/linux/ip_vs.h and the parsers in
// net/netfilter/ipvs/ip_vs_ctl.c (ip_vs_genl_parse_service,
// ip_vs_genl_parse_dest, ip_vs_genl_new_daemon, ip_vs_genl_set_config).
//
// Requests are appended to a caller's buffer without other allocations:
// a batch of 100,000 requests is encoded into one slice.

// enc appends netlink attributes (struct nlattr: u16 length, u16 type, the
// payload padded to 4 bytes) in host byte order.
type enc struct{ b []byte }

const nlaNested = 0x8000 // NLA_F_NESTED

func (e *enc) attr(typ uint16, payload []byte) {
	ne := binary.NativeEndian
	e.b = ne.AppendUint16(e.b, uint16(4+len(payload)))
	e.b = ne.AppendUint16(e.b, typ)
	e.b = append(e.b, payload...)
	e.pad()
}

func (e *enc) pad() {
	for len(e.b)%4 != 0 {
		e.b = append(e.b, 0)
	}
}

func (e *enc) u8(typ uint16, v uint8) { e.attr(typ, []byte{v}) }

func (e *enc) u16(typ uint16, v uint16) {
	var p [2]byte
	binary.NativeEndian.PutUint16(p[:], v)
	e.attr(typ, p[:])
}

func (e *enc) u32(typ uint16, v uint32) {
	var p [4]byte
	binary.NativeEndian.PutUint32(p[:], v)
	e.attr(typ, p[:])
}

// be16 is a network-order 16-bit value, as nla_get_be16 reads it.
func (e *enc) be16(typ uint16, v uint16) {
	var p [2]byte
	binary.BigEndian.PutUint16(p[:], v)
	e.attr(typ, p[:])
}

// str is a NUL-terminated string (NLA_NUL_STRING).
func (e *enc) str(typ uint16, s string) {
	ne := binary.NativeEndian
	e.b = ne.AppendUint16(e.b, uint16(4+len(s)+1))
	e.b = ne.AppendUint16(e.b, typ)
	e.b = append(e.b, s...)
	e.b = append(e.b, 0)
	e.pad()
}

// addr is an address in the kernel's union nf_inet_addr: 4 bytes for IPv4
// (nla_memcpy zero-fills the rest), 16 for IPv6.
func (e *enc) addr(typ uint16, a netip.Addr) {
	if a.Is4() {
		p := a.As4()
		e.attr(typ, p[:])
		return
	}
	p := a.As16()
	e.attr(typ, p[:])
}

// nest starts a nested attribute; end closes it.
func (e *enc) nest(typ uint16) int {
	off := len(e.b)
	e.b = append(e.b, 0, 0, 0, 0)
	binary.NativeEndian.PutUint16(e.b[off+2:], typ|nlaNested)
	return off
}

func (e *enc) end(off int) {
	binary.NativeEndian.PutUint16(e.b[off:], uint16(len(e.b)-off))
}

// genl starts a request: struct genlmsghdr (cmd, version, reserved).
func genl(b []byte, cmd uint8) enc { return enc{append(b, cmd, genlVersion, 0, 0)} }

// netmask is IPVS_SVC_ATTR_NETMASK for a persistence prefix length: a
// network-order mask for IPv4 services, the prefix length itself (host
// order) for IPv6 ones (ip_vs_ctl.c compares it with 1..128).
func netmask(f Family, prefixLen uint8) [4]byte {
	var p [4]byte
	bits := f.Bits()
	n := int(prefixLen)
	if n == 0 || n > bits {
		n = bits
	}
	if f == IPv6 {
		binary.NativeEndian.PutUint32(p[:], uint32(n))
		return p
	}
	mask := uint32(0)
	if n > 0 {
		mask = ^uint32(0) << (32 - n)
	}
	binary.BigEndian.PutUint32(p[:], mask)
	return p
}

// serviceKey writes the identifying attributes of a service.
func (e *enc) serviceKey(k ServiceKey) {
	k = k.normal()
	e.u16(svcAttrAF, uint16(k.Family))
	if k.FWMark != 0 {
		e.u32(svcAttrFWMark, k.FWMark)
		return
	}
	e.u16(svcAttrProtocol, uint16(k.Protocol))
	e.addr(svcAttrAddr, k.Addr)
	e.be16(svcAttrPort, k.Port)
}

// svcFlags returns the kernel's flag word for s.
func svcFlags(s Service) uint32 {
	f := uint32(s.SchedFlags)
	if s.OnePacket {
		f |= svcFlagOnePacket
	}
	if s.Persistence.Timeout > 0 {
		f |= svcFlagPersistent
	}
	return f
}

// service writes a full service: identity and configuration. The flags go
// with an all-ones mask (struct ip_vs_flags), so the kernel replaces them all.
func (e *enc) service(s Service) {
	k := s.Key()
	e.serviceKey(k)
	e.str(svcAttrSchedName, s.Scheduler)
	if s.PersistenceEngine != "" {
		e.str(svcAttrPEName, s.PersistenceEngine)
	}
	var flags [8]byte
	binary.NativeEndian.PutUint32(flags[:4], svcFlags(s))
	binary.NativeEndian.PutUint32(flags[4:], ^uint32(0))
	e.attr(svcAttrFlags, flags[:])
	e.u32(svcAttrTimeout, uint32(s.Persistence.Timeout/time.Second))
	nm := netmask(k.Family, s.Persistence.PrefixLen)
	e.attr(svcAttrNetmask, nm[:])
}

// dest writes a destination; full adds its configuration. The address
// family is always sent (the kernel otherwise assumes the service's).
func (e *enc) dest(svcFamily Family, d Destination, full bool) {
	e.addr(destAttrAddr, d.Addr)
	e.be16(destAttrPort, d.Port)
	f := d.family()
	if f == 0 {
		f = svcFamily
	}
	e.u16(destAttrAddrFamily, uint16(f))
	if !full {
		return
	}
	e.u32(destAttrFwdMethod, uint32(d.Forward))
	e.u32(destAttrWeight, d.Weight)
	e.u32(destAttrUThresh, d.UpperThreshold)
	e.u32(destAttrLThresh, d.LowerThreshold)
	if d.Forward == Tunnel {
		e.u8(destAttrTunType, uint8(d.TunnelType))
		e.be16(destAttrTunPort, d.TunnelPort)
		e.u16(destAttrTunFlags, uint16(d.TunnelFlags))
	}
}

// appendServiceRequest appends NEW/SET_SERVICE (full) or DEL/GET_SERVICE,
// ZERO, GET_DEST (identity only) to b.
func appendServiceRequest(b []byte, cmd uint8, s Service, full bool) []byte {
	e := genl(b, cmd)
	n := e.nest(cmdAttrService)
	if full {
		e.service(s)
	} else {
		e.serviceKey(s.Key())
	}
	e.end(n)
	return e.b
}

// appendDestRequest appends NEW/SET_DEST (full) or DEL_DEST to b.
func appendDestRequest(b []byte, cmd uint8, k ServiceKey, d Destination, full bool) []byte {
	k = k.normal()
	e := genl(b, cmd)
	n := e.nest(cmdAttrService)
	e.serviceKey(k)
	e.end(n)
	n = e.nest(cmdAttrDest)
	e.dest(k.Family, d, full)
	e.end(n)
	return e.b
}

// appendOpRequest appends the request for one batch operation to b.
func appendOpRequest(b []byte, op Op) []byte {
	switch op.Kind {
	case OpAddService:
		return appendServiceRequest(b, cmdNewService, op.Service, true)
	case OpUpdateService:
		return appendServiceRequest(b, cmdSetService, op.Service, true)
	case OpDeleteService:
		return appendServiceRequest(b, cmdDelService, op.Service, false)
	case OpAddDestination:
		return appendDestRequest(b, cmdNewDest, op.Service.Key(), op.Destination, true)
	case OpUpdateDestination:
		return appendDestRequest(b, cmdSetDest, op.Service.Key(), op.Destination, true)
	case OpDeleteDestination:
		return appendDestRequest(b, cmdDelDest, op.Service.Key(), op.Destination, false)
	}
	return b
}

func serviceRequest(cmd uint8, s Service, full bool) []byte {
	return appendServiceRequest(nil, cmd, s, full)
}

func destRequest(cmd uint8, k ServiceKey, d Destination, full bool) []byte {
	return appendDestRequest(nil, cmd, k, d, full)
}

func opRequest(op Op) []byte { return appendOpRequest(nil, op) }

// daemonRequest is NEW_DAEMON.
func daemonRequest(d Daemon) []byte {
	e := genl(nil, cmdNewDaemon)
	n := e.nest(cmdAttrDaemon)
	e.u32(daemonAttrState, uint32(d.State))
	e.str(daemonAttrMcastIfn, d.Interface)
	e.u32(daemonAttrSyncID, d.SyncID)
	if d.MaxLen != 0 {
		e.u16(daemonAttrSyncMaxLen, d.MaxLen)
	}
	switch {
	case d.Group.Is4():
		e.addr(daemonAttrMcastGroup, d.Group)
	case d.Group.Is6():
		e.addr(daemonAttrMcastGroup6, d.Group)
	}
	if d.Port != 0 {
		e.u16(daemonAttrMcastPort, d.Port) // host order: nla_get_u16
	}
	if d.TTL != 0 {
		e.u8(daemonAttrMcastTTL, d.TTL)
	}
	e.end(n)
	return e.b
}

// delDaemonRequest is DEL_DAEMON.
func delDaemonRequest(state DaemonState) []byte {
	e := genl(nil, cmdDelDaemon)
	n := e.nest(cmdAttrDaemon)
	e.u32(daemonAttrState, uint32(state))
	e.end(n)
	return e.b
}

// setConfigRequest is SET_CONFIG; zero timeouts are left out (unchanged).
func setConfigRequest(t Timeouts) []byte {
	e := genl(nil, cmdSetConfig)
	for _, a := range []struct {
		typ uint16
		v   time.Duration
	}{{cmdAttrTimeoutTCP, t.TCP}, {cmdAttrTimeoutTCPFin, t.TCPFin}, {cmdAttrTimeoutUDP, t.UDP}} {
		if a.v != 0 {
			e.u32(a.typ, uint32(a.v/time.Second))
		}
	}
	return e.b
}

// emptyRequest is a command without attributes (GET_INFO, GET_CONFIG,
// GET_SERVICE dump, GET_DAEMON, FLUSH, ZERO of everything).
func emptyRequest(cmd uint8) []byte { return genl(nil, cmd).b }
