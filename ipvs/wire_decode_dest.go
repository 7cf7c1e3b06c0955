package ipvs

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/ipvskit/ipvskit/internal/nlattr"
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
	a := nlattr.NewDecoder(nb)
	var addr, stats32, stats64 []byte
	d := &di.Destination
	for a.Next() {
		switch a.Type() {
		case destAttrAddr:
			addr = a.Bytes()
		case destAttrPort:
			d.Port = a.Uint16BE()
		case destAttrFwdMethod:
			d.Forward = ForwardMethod(a.Uint32() & fwdMask)
		case destAttrWeight:
			d.Weight = a.Uint32()
		case destAttrUThresh:
			d.UpperThreshold = a.Uint32()
		case destAttrLThresh:
			d.LowerThreshold = a.Uint32()
		case destAttrActiveConns:
			di.ActiveConns = a.Uint32()
		case destAttrInactConns:
			di.InactiveConns = a.Uint32()
		case destAttrPersistConns:
			di.PersistentConns = a.Uint32()
		case destAttrAddrFamily:
			d.Family = Family(u16small(&a))
		case destAttrTunType:
			d.TunnelType = TunnelType(a.Uint8())
		case destAttrTunPort:
			d.TunnelPort = a.Uint16BE()
		case destAttrTunFlags:
			d.TunnelFlags = TunnelFlags(a.Uint16())
		case destAttrStats:
			stats32 = a.Bytes()
		case destAttrStats64:
			stats64 = a.Bytes()
		}
	}
	if a.Err() != nil {
		return di, fmt.Errorf("decoding destination: %w", a.Err())
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
	if di.Stats, err = pickStats(stats64, stats32); err != nil {
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
	a := nlattr.NewDecoder(nb)
	for a.Next() {
		switch a.Type() {
		case daemonAttrState:
			d.State = DaemonState(a.Uint32())
		case daemonAttrMcastIfn:
			d.Interface = a.String()
		case daemonAttrSyncID:
			d.SyncID = a.Uint32()
		case daemonAttrSyncMaxLen:
			d.MaxLen = a.Uint16()
		case daemonAttrMcastGroup:
			d.Group = group(&a, IPv4)
		case daemonAttrMcastGroup6:
			d.Group = group(&a, IPv6)
		case daemonAttrMcastPort:
			d.Port = a.Uint16()
		case daemonAttrMcastTTL:
			d.TTL = a.Uint8()
		}
	}
	if a.Err() != nil {
		return d, fmt.Errorf("decoding sync daemon: %w", a.Err())
	}
	return d, nil
}

// group reads a sync daemon's multicast group of family f.
func group(a *nlattr.Decoder, f Family) netip.Addr {
	g, err := decodeAddr(a.Bytes(), f)
	if err != nil {
		a.Fail(err)
	}
	return g
}

// topLevel decodes the top-level u32 attributes of a reply into a map.
func topLevel(b []byte) (map[uint16]uint32, error) {
	body, err := genlAttrs(b)
	if err != nil {
		return nil, err
	}
	a := nlattr.NewDecoder(body)
	m := map[uint16]uint32{}
	for a.Next() {
		m[a.Type()] = a.Uint32()
	}
	return m, a.Err()
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
