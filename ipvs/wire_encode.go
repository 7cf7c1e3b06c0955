package ipvs

import (
	"encoding/binary"
	"time"

	"github.com/ipvskit/ipvskit/internal/nlattr"
)

// This file builds the generic netlink payloads (genetlink header and
// attributes) of every IPVS request. The layouts follow
// include/uapi/linux/ip_vs.h and the parsers in
// net/netfilter/ipvs/ip_vs_ctl.c (ip_vs_genl_parse_service,
// ip_vs_genl_parse_dest, ip_vs_genl_new_daemon, ip_vs_genl_set_config).
//
// Requests are appended to a caller's buffer by internal/nlattr's Encoder,
// without other allocations: a batch of 100,000 requests is encoded into
// one slice. Ports go in network order (nla_get_be16) without
// NLA_F_NET_BYTEORDER, as this package always sent them.

// genl starts a request: struct genlmsghdr (cmd, version, reserved).
func genl(b []byte, cmd uint8) *nlattr.Encoder {
	return nlattr.NewEncoder(append(b, cmd, genlVersion, 0, 0))
}

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
func serviceKey(e *nlattr.Encoder, k ServiceKey) {
	k = k.normal()
	e.Uint16(svcAttrAF, uint16(k.Family))
	if k.FWMark != 0 {
		e.Uint32(svcAttrFWMark, k.FWMark)
		return
	}
	e.Uint16(svcAttrProtocol, uint16(k.Protocol))
	e.Addr(svcAttrAddr, k.Addr)
	e.Uint16BE(svcAttrPort, k.Port)
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
func service(e *nlattr.Encoder, s Service) {
	k := s.Key()
	serviceKey(e, k)
	e.String(svcAttrSchedName, s.Scheduler)
	if s.PersistenceEngine != "" {
		e.String(svcAttrPEName, s.PersistenceEngine)
	}
	var flags [8]byte
	binary.NativeEndian.PutUint32(flags[:4], svcFlags(s))
	binary.NativeEndian.PutUint32(flags[4:], ^uint32(0))
	e.Attr(svcAttrFlags, flags[:])
	e.Uint32(svcAttrTimeout, uint32(s.Persistence.Timeout/time.Second))
	nm := netmask(k.Family, s.Persistence.PrefixLen)
	e.Attr(svcAttrNetmask, nm[:])
}

// dest writes a destination; full adds its configuration. The address
// family is always sent (the kernel otherwise assumes the service's).
func dest(e *nlattr.Encoder, svcFamily Family, d Destination, full bool) {
	e.Addr(destAttrAddr, d.Addr)
	e.Uint16BE(destAttrPort, d.Port)
	f := d.family()
	if f == 0 {
		f = svcFamily
	}
	e.Uint16(destAttrAddrFamily, uint16(f))
	if !full {
		return
	}
	e.Uint32(destAttrFwdMethod, uint32(d.Forward))
	e.Uint32(destAttrWeight, d.Weight)
	e.Uint32(destAttrUThresh, d.UpperThreshold)
	e.Uint32(destAttrLThresh, d.LowerThreshold)
	if d.Forward == Tunnel {
		e.Uint8(destAttrTunType, uint8(d.TunnelType))
		e.Uint16BE(destAttrTunPort, d.TunnelPort)
		e.Uint16(destAttrTunFlags, uint16(d.TunnelFlags))
	}
}

// appendServiceRequest appends NEW/SET_SERVICE (full) or DEL/GET_SERVICE,
// ZERO, GET_DEST (identity only) to b.
func appendServiceRequest(b []byte, cmd uint8, s Service, full bool) []byte {
	e := genl(b, cmd)
	n := e.Nest(cmdAttrService)
	if full {
		service(e, s)
	} else {
		serviceKey(e, s.Key())
	}
	e.End(n)
	return e.Bytes()
}

// appendDestRequest appends NEW/SET_DEST (full) or DEL_DEST to b.
func appendDestRequest(b []byte, cmd uint8, k ServiceKey, d Destination, full bool) []byte {
	k = k.normal()
	e := genl(b, cmd)
	n := e.Nest(cmdAttrService)
	serviceKey(e, k)
	e.End(n)
	n = e.Nest(cmdAttrDest)
	dest(e, k.Family, d, full)
	e.End(n)
	return e.Bytes()
}

// appendOpRequest appends the request for one batch operation to b.
func appendOpRequest(b []byte, op Op) []byte {
	return appendRequest(b, op.Kind, &op.Service, &op.Destination)
}

// appendRequest appends the request of kind k on service s (only its
// identity fields count for all but OpAddService and OpUpdateService) and
// destination d (for destination kinds) to b.
func appendRequest(b []byte, k OpKind, s *Service, d *Destination) []byte {
	switch k {
	case OpAddService:
		return appendServiceRequest(b, cmdNewService, *s, true)
	case OpUpdateService:
		return appendServiceRequest(b, cmdSetService, *s, true)
	case OpDeleteService:
		return appendServiceRequest(b, cmdDelService, *s, false)
	case OpAddDestination:
		return appendDestRequest(b, cmdNewDest, s.Key(), *d, true)
	case OpUpdateDestination:
		return appendDestRequest(b, cmdSetDest, s.Key(), *d, true)
	case OpDeleteDestination:
		return appendDestRequest(b, cmdDelDest, s.Key(), *d, false)
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
	n := e.Nest(cmdAttrDaemon)
	e.Uint32(daemonAttrState, uint32(d.State))
	e.String(daemonAttrMcastIfn, d.Interface)
	e.Uint32(daemonAttrSyncID, d.SyncID)
	if d.MaxLen != 0 {
		e.Uint16(daemonAttrSyncMaxLen, d.MaxLen)
	}
	switch {
	case d.Group.Is4():
		e.Addr(daemonAttrMcastGroup, d.Group)
	case d.Group.Is6():
		e.Addr(daemonAttrMcastGroup6, d.Group)
	}
	if d.Port != 0 {
		e.Uint16(daemonAttrMcastPort, d.Port) // host order: nla_get_u16
	}
	if d.TTL != 0 {
		e.Uint8(daemonAttrMcastTTL, d.TTL)
	}
	e.End(n)
	return e.Bytes()
}

// delDaemonRequest is DEL_DAEMON.
func delDaemonRequest(state DaemonState) []byte {
	e := genl(nil, cmdDelDaemon)
	n := e.Nest(cmdAttrDaemon)
	e.Uint32(daemonAttrState, uint32(state))
	e.End(n)
	return e.Bytes()
}

// setConfigRequest is SET_CONFIG; zero timeouts are left out (unchanged).
func setConfigRequest(t Timeouts) []byte {
	e := genl(nil, cmdSetConfig)
	for _, a := range []struct {
		typ uint16
		v   time.Duration
	}{{cmdAttrTimeoutTCP, t.TCP}, {cmdAttrTimeoutTCPFin, t.TCPFin}, {cmdAttrTimeoutUDP, t.UDP}} {
		if a.v != 0 {
			e.Uint32(a.typ, uint32(a.v/time.Second))
		}
	}
	return e.Bytes()
}

// emptyRequest is a command without attributes (GET_INFO, GET_CONFIG,
// GET_SERVICE dump, GET_DAEMON, FLUSH, ZERO of everything).
func emptyRequest(cmd uint8) []byte { return genl(nil, cmd).Bytes() }
