package ipvs

import (
	"fmt"
	"time"
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
	a := attrs{b: nb}
	var addr, stats32, stats64 []byte
	d := &di.Destination
	for a.next() {
		switch a.typ {
		case destAttrAddr:
			addr = a.val
		case destAttrPort:
			d.Port = a.be16()
		case destAttrFwdMethod:
			d.Forward = ForwardMethod(a.u32() & fwdMask)
		case destAttrWeight:
			d.Weight = a.u32()
		case destAttrUThresh:
			d.UpperThreshold = a.u32()
		case destAttrLThresh:
			d.LowerThreshold = a.u32()
		case destAttrActiveConns:
			di.ActiveConns = a.u32()
		case destAttrInactConns:
			di.InactiveConns = a.u32()
		case destAttrPersistConns:
			di.PersistentConns = a.u32()
		case destAttrAddrFamily:
			d.Family = Family(a.u16small())
		case destAttrTunType:
			d.TunnelType = TunnelType(a.u8())
		case destAttrTunPort:
			d.TunnelPort = a.be16()
		case destAttrTunFlags:
			d.TunnelFlags = TunnelFlags(a.u16())
		case destAttrStats:
			stats32 = a.val
		case destAttrStats64:
			stats64 = a.val
		}
	}
	if a.err != nil {
		return di, fmt.Errorf("decoding destination: %w", a.err)
	}
	if d.Family == 0 {
		d.Family = svcFamily
	}
	if d.Addr, err = decodeAddr(addr, d.Family); err != nil {
		return di, fmt.Errorf("decoding destination: %w", err)
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
		return di, fmt.Errorf("decoding destination stats: %w", err)
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
	a := attrs{b: nb}
	for a.next() {
		switch a.typ {
		case daemonAttrState:
			d.State = DaemonState(a.u32())
		case daemonAttrMcastIfn:
			d.Interface = a.str()
		case daemonAttrSyncID:
			d.SyncID = a.u32()
		case daemonAttrSyncMaxLen:
			d.MaxLen = a.u16()
		case daemonAttrMcastGroup:
			d.Group, a.err = decodeAddr(a.val, IPv4)
		case daemonAttrMcastGroup6:
			d.Group, a.err = decodeAddr(a.val, IPv6)
		case daemonAttrMcastPort:
			d.Port = a.u16()
		case daemonAttrMcastTTL:
			d.TTL = a.u8()
		}
	}
	if a.err != nil {
		return d, fmt.Errorf("decoding sync daemon: %w", a.err)
	}
	return d, nil
}

// topLevel decodes the top-level u32 attributes of a reply into a map.
func topLevel(b []byte) (map[uint16]uint32, error) {
	body, err := genlAttrs(b)
	if err != nil {
		return nil, err
	}
	a := attrs{b: body}
	m := map[uint16]uint32{}
	for a.next() {
		m[a.typ] = a.u32()
	}
	return m, a.err
}

// decodeTimeouts reads a GET_CONFIG reply.
func decodeTimeouts(b []byte) (Timeouts, error) {
	m, err := topLevel(b)
	if err != nil {
		return Timeouts{}, fmt.Errorf("decoding timeouts: %w", err)
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
		return Info{}, fmt.Errorf("decoding info: %w", err)
	}
	v, ok := m[infoAttrVersion]
	if !ok {
		return Info{}, fmt.Errorf("decoding info: version %w", errMissing)
	}
	return Info{Version: Version(v), ConnTableSize: m[infoAttrConnTabSize]}, nil
}
