package ipvs

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// This file builds the generic netlink payloads (genetlink header and
// attributes) of every IPVS request. The layouts follow
// include/uapi/linux/ip_vs.h and the parsers in
// net/netfilter/ipvs/ip_vs_ctl.c (ip_vs_genl_parse_service,
// ip_vs_genl_parse_dest, ip_vs_genl_new_daemon, ip_vs_genl_set_config).

// genlPayload wraps attrs in a genetlink header for cmd.
func genlPayload(cmd uint8, attrs []byte) []byte {
	b, _ := (&genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: genlVersion},
		Data:   attrs,
	}).MarshalBinary() // cannot fail: a genetlink Message always marshals
	return b
}

// encode runs f on a fresh encoder and returns the attributes. The encoders
// below never fail (they only put fixed-size values and strings validated
// beforehand), so an error here is a bug worth a loud failure in tests: it
// surfaces as an empty payload, which the kernel refuses with EINVAL.
func encode(f func(ae *netlink.AttributeEncoder)) []byte {
	ae := netlink.NewAttributeEncoder()
	f(ae)
	b, err := ae.Encode()
	if err != nil {
		return nil
	}
	return b
}

// be16 is a network-order 16-bit value, as nla_get_be16 reads it.
func be16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }

// addrBytes is an address in the kernel's union nf_inet_addr: 4 bytes for
// IPv4 (nla_memcpy zero-fills the rest), 16 for IPv6.
func addrBytes(a netip.Addr) []byte { return a.AsSlice() }

// netmask is IPVS_SVC_ATTR_NETMASK for a persistence prefix length: a
// network-order mask for IPv4 services, the prefix length itself (host
// order) for IPv6 ones (ip_vs_ctl.c compares it with 1..128).
func netmask(f Family, prefixLen uint8) []byte {
	bits := f.bits()
	n := int(prefixLen)
	if n == 0 || n > bits {
		n = bits
	}
	if f == IPv6 {
		return binary.NativeEndian.AppendUint32(nil, uint32(n))
	}
	mask := uint32(0)
	if n > 0 {
		mask = ^uint32(0) << (32 - n)
	}
	return binary.BigEndian.AppendUint32(nil, mask)
}

// putServiceKey writes the identifying attributes of a service.
func putServiceKey(ae *netlink.AttributeEncoder, k ServiceKey) {
	k = k.normal()
	ae.Uint16(svcAttrAF, uint16(k.Family))
	if k.FWMark != 0 {
		ae.Uint32(svcAttrFWMark, k.FWMark)
		return
	}
	ae.Uint16(svcAttrProtocol, uint16(k.Protocol))
	ae.Bytes(svcAttrAddr, addrBytes(k.Addr))
	ae.Bytes(svcAttrPort, be16(k.Port))
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

// putService writes a full service: identity and configuration. The flags go
// with an all-ones mask, so the kernel replaces every flag.
func putService(ae *netlink.AttributeEncoder, s Service) {
	putServiceKey(ae, s.Key())
	ae.String(svcAttrSchedName, s.Scheduler)
	if s.PersistenceEngine != "" {
		ae.String(svcAttrPEName, s.PersistenceEngine)
	}
	flags := binary.NativeEndian.AppendUint32(nil, svcFlags(s)) // struct ip_vs_flags.flags
	flags = binary.NativeEndian.AppendUint32(flags, ^uint32(0)) // .mask
	ae.Bytes(svcAttrFlags, flags)
	ae.Uint32(svcAttrTimeout, uint32(s.Persistence.Timeout/time.Second))
	ae.Bytes(svcAttrNetmask, netmask(s.Key().Family, s.Persistence.PrefixLen))
}

// putDest writes a destination; full adds its configuration.
func putDest(ae *netlink.AttributeEncoder, svcFamily Family, d Destination, full bool) {
	ae.Bytes(destAttrAddr, addrBytes(d.Addr))
	ae.Bytes(destAttrPort, be16(d.Port))
	f := d.family()
	if f == 0 {
		f = svcFamily
	}
	ae.Uint16(destAttrAddrFamily, uint16(f))
	if !full {
		return
	}
	ae.Uint32(destAttrFwdMethod, uint32(d.Forward))
	ae.Uint32(destAttrWeight, d.Weight)
	ae.Uint32(destAttrUThresh, d.UpperThreshold)
	ae.Uint32(destAttrLThresh, d.LowerThreshold)
	if d.Forward == Tunnel {
		ae.Uint8(destAttrTunType, uint8(d.TunnelType))
		ae.Bytes(destAttrTunPort, be16(d.TunnelPort))
		ae.Uint16(destAttrTunFlags, uint16(d.TunnelFlags))
	}
}

// serviceRequest is NEW/SET_SERVICE (full) or DEL/GET_SERVICE, ZERO, GET_DEST
// (identity only).
func serviceRequest(cmd uint8, s Service, full bool) []byte {
	return genlPayload(cmd, encode(func(ae *netlink.AttributeEncoder) {
		ae.Nested(cmdAttrService, func(nae *netlink.AttributeEncoder) error {
			if full {
				putService(nae, s)
			} else {
				putServiceKey(nae, s.Key())
			}
			return nil
		})
	}))
}

// destRequest is NEW/SET_DEST (full) or DEL_DEST.
func destRequest(cmd uint8, k ServiceKey, d Destination, full bool) []byte {
	k = k.normal()
	return genlPayload(cmd, encode(func(ae *netlink.AttributeEncoder) {
		ae.Nested(cmdAttrService, func(nae *netlink.AttributeEncoder) error {
			putServiceKey(nae, k)
			return nil
		})
		ae.Nested(cmdAttrDest, func(nae *netlink.AttributeEncoder) error {
			putDest(nae, k.Family, d, full)
			return nil
		})
	}))
}

// opRequest is the request for one batch operation.
func opRequest(op Op) []byte {
	switch op.Kind {
	case OpAddService:
		return serviceRequest(cmdNewService, op.Service, true)
	case OpUpdateService:
		return serviceRequest(cmdSetService, op.Service, true)
	case OpDeleteService:
		return serviceRequest(cmdDelService, op.Service, false)
	case OpAddDestination:
		return destRequest(cmdNewDest, op.Service.Key(), op.Destination, true)
	case OpUpdateDestination:
		return destRequest(cmdSetDest, op.Service.Key(), op.Destination, true)
	case OpDeleteDestination:
		return destRequest(cmdDelDest, op.Service.Key(), op.Destination, false)
	}
	return nil
}

// daemonRequest is NEW_DAEMON.
func daemonRequest(d Daemon) []byte {
	return genlPayload(cmdNewDaemon, encode(func(ae *netlink.AttributeEncoder) {
		ae.Nested(cmdAttrDaemon, func(nae *netlink.AttributeEncoder) error {
			nae.Uint32(daemonAttrState, uint32(d.State))
			nae.String(daemonAttrMcastIfn, d.Interface)
			nae.Uint32(daemonAttrSyncID, d.SyncID)
			if d.MaxLen != 0 {
				nae.Uint16(daemonAttrSyncMaxLen, d.MaxLen)
			}
			switch {
			case d.Group.Is4():
				nae.Bytes(daemonAttrMcastGroup, addrBytes(d.Group))
			case d.Group.Is6():
				nae.Bytes(daemonAttrMcastGroup6, addrBytes(d.Group))
			}
			if d.Port != 0 {
				nae.Uint16(daemonAttrMcastPort, d.Port)
			}
			if d.TTL != 0 {
				nae.Uint8(daemonAttrMcastTTL, d.TTL)
			}
			return nil
		})
	}))
}

// delDaemonRequest is DEL_DAEMON.
func delDaemonRequest(state DaemonState) []byte {
	return genlPayload(cmdDelDaemon, encode(func(ae *netlink.AttributeEncoder) {
		ae.Nested(cmdAttrDaemon, func(nae *netlink.AttributeEncoder) error {
			nae.Uint32(daemonAttrState, uint32(state))
			return nil
		})
	}))
}

// setConfigRequest is SET_CONFIG; zero timeouts are left out (unchanged).
func setConfigRequest(t Timeouts) []byte {
	return genlPayload(cmdSetConfig, encode(func(ae *netlink.AttributeEncoder) {
		for _, a := range []struct {
			typ uint16
			v   time.Duration
		}{{cmdAttrTimeoutTCP, t.TCP}, {cmdAttrTimeoutTCPFin, t.TCPFin}, {cmdAttrTimeoutUDP, t.UDP}} {
			if a.v != 0 {
				ae.Uint32(a.typ, uint32(a.v/time.Second))
			}
		}
	}))
}

// emptyRequest is a command without attributes (GET_INFO, GET_CONFIG,
// GET_SERVICE dump, GET_DAEMON, FLUSH, ZERO of everything).
func emptyRequest(cmd uint8) []byte { return genlPayload(cmd, nil) }
