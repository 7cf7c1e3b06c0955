package ipvs

import (
	"fmt"
	"time"

	"github.com/mdlayher/netlink"
)

// decodeDest reads one message of a GET_DEST dump. svcFamily stands in for
// the destination's family when the kernel omits IPVS_DEST_ATTR_ADDR_FAMILY
// (before Linux 4.1 every destination had its service's family).
func decodeDest(b []byte, svcFamily Family) (DestinationInfo, error) {
	var di DestinationInfo
	nb, err := nested(b, cmdAttrDest)
	if err != nil {
		return di, err
	}
	ad, err := netlink.NewAttributeDecoder(nb)
	if err != nil {
		return di, err
	}
	var addr, stats32, stats64 []byte
	d := &di.Destination
	for ad.Next() {
		switch ad.Type() {
		case destAttrAddr:
			addr = ad.Bytes()
		case destAttrPort:
			d.Port, err = decodeBE16(ad.Bytes())
		case destAttrFwdMethod:
			d.Forward = ForwardMethod(ad.Uint32() & fwdMask)
		case destAttrWeight:
			d.Weight = ad.Uint32()
		case destAttrUThresh:
			d.UpperThreshold = ad.Uint32()
		case destAttrLThresh:
			d.LowerThreshold = ad.Uint32()
		case destAttrActiveConns:
			di.ActiveConns = ad.Uint32()
		case destAttrInactConns:
			di.InactiveConns = ad.Uint32()
		case destAttrPersistConns:
			di.PersistentConns = ad.Uint32()
		case destAttrAddrFamily:
			d.Family = Family(ad.Uint16())
		case destAttrTunType:
			d.TunnelType = TunnelType(ad.Uint8())
		case destAttrTunPort:
			d.TunnelPort, err = decodeBE16(ad.Bytes())
		case destAttrTunFlags:
			d.TunnelFlags = TunnelFlags(ad.Uint16())
		case destAttrStats:
			stats32 = ad.Bytes()
		case destAttrStats64:
			stats64 = ad.Bytes()
		}
		if err != nil {
			return di, fmt.Errorf("ipvs: decoding destination: %w", err)
		}
	}
	if err := ad.Err(); err != nil {
		return di, fmt.Errorf("ipvs: decoding destination: %w", err)
	}
	if d.Family == 0 {
		d.Family = svcFamily
	}
	if d.Addr, err = decodeAddr(addr, d.Family); err != nil {
		return di, fmt.Errorf("ipvs: decoding destination: %w", err)
	}
	if d.Forward != Tunnel {
		// The kernel reports its zeroed tunnel fields for every method.
		d.TunnelType, d.TunnelPort, d.TunnelFlags = 0, 0, 0
	}
	if stats64 != nil {
		di.Stats, err = decodeStats(stats64)
	} else if stats32 != nil {
		di.Stats, err = decodeStats(stats32)
	}
	if err != nil {
		return di, fmt.Errorf("ipvs: decoding destination stats: %w", err)
	}
	return di, nil
}

// decodeDaemon reads one message of a GET_DAEMON dump.
func decodeDaemon(b []byte) (Daemon, error) {
	var d Daemon
	nb, err := nested(b, cmdAttrDaemon)
	if err != nil {
		return d, err
	}
	ad, err := netlink.NewAttributeDecoder(nb)
	if err != nil {
		return d, err
	}
	for ad.Next() {
		switch ad.Type() {
		case daemonAttrState:
			d.State = DaemonState(ad.Uint32())
		case daemonAttrMcastIfn:
			d.Interface = ad.String()
		case daemonAttrSyncID:
			d.SyncID = ad.Uint32()
		case daemonAttrSyncMaxLen:
			d.MaxLen = ad.Uint16()
		case daemonAttrMcastGroup:
			d.Group, err = decodeAddr(ad.Bytes(), IPv4)
		case daemonAttrMcastGroup6:
			d.Group, err = decodeAddr(ad.Bytes(), IPv6)
		case daemonAttrMcastPort:
			d.Port = ad.Uint16()
		case daemonAttrMcastTTL:
			d.TTL = ad.Uint8()
		}
		if err != nil {
			return d, fmt.Errorf("ipvs: decoding sync daemon: %w", err)
		}
	}
	if err := ad.Err(); err != nil {
		return d, fmt.Errorf("ipvs: decoding sync daemon: %w", err)
	}
	return d, nil
}

// topLevel decodes the top-level u32 attributes of a reply into a map.
func topLevel(b []byte) (map[uint16]uint32, error) {
	attrs, err := genlAttrs(b)
	if err != nil {
		return nil, err
	}
	ad, err := netlink.NewAttributeDecoder(attrs)
	if err != nil {
		return nil, err
	}
	m := map[uint16]uint32{}
	for ad.Next() {
		m[ad.Type()] = ad.Uint32()
	}
	return m, ad.Err()
}

// decodeTimeouts reads a GET_CONFIG reply.
func decodeTimeouts(b []byte) (Timeouts, error) {
	m, err := topLevel(b)
	if err != nil {
		return Timeouts{}, fmt.Errorf("ipvs: decoding timeouts: %w", err)
	}
	return Timeouts{
		TCP:    time.Duration(m[cmdAttrTimeoutTCP]) * time.Second,
		TCPFin: time.Duration(m[cmdAttrTimeoutTCPFin]) * time.Second,
		UDP:    time.Duration(m[cmdAttrTimeoutUDP]) * time.Second,
	}, nil
}

// decodeInfo reads a GET_INFO reply.
func decodeInfo(b []byte) (Info, error) {
	m, err := topLevel(b)
	if err != nil {
		return Info{}, fmt.Errorf("ipvs: decoding info: %w", err)
	}
	v, ok := m[infoAttrVersion]
	if !ok {
		return Info{}, fmt.Errorf("ipvs: decoding info: version %w", errMissing)
	}
	return Info{Version: Version(v), ConnTableSize: m[infoAttrConnTabSize]}, nil
}
