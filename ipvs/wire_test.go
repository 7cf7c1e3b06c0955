package ipvs

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
	"time"
)

// Byte layouts built by hand from the UAPI: struct genlmsghdr (cmd, version,
// reserved u16), then struct nlattr (len u16, type u16, payload padded to 4).

func genlHdr(cmd uint8) []byte { return []byte{cmd, genlVersion, 0, 0} }

func attr(typ uint16, payload ...byte) []byte {
	b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(payload)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func nest(typ uint16, attrs ...[]byte) []byte { return attr(typ|0x8000, bytes.Join(attrs, nil)...) }

func u16(v uint16) []byte     { return binary.NativeEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte     { return binary.NativeEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte     { return binary.NativeEndian.AppendUint64(nil, v) }
func cat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

func checkBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s:\n got % x\nwant % x", what, got, want)
	}
}

func TestServiceRequestLayout(t *testing.T) {
	s := Service{Protocol: TCP, Addr: mustAddr("198.18.0.1"), Port: 80, Scheduler: "sh",
		SchedFlags: SHFallback, OnePacket: true, Persistence: Persistence{Timeout: 300 * time.Second, PrefixLen: 24}}
	want := cat(genlHdr(cmdNewService), nest(cmdAttrService,
		attr(svcAttrAF, u16(2)...),
		attr(svcAttrProtocol, u16(6)...),
		attr(svcAttrAddr, 198, 18, 0, 1),
		attr(svcAttrPort, 0, 80), // network order
		attr(svcAttrSchedName, 's', 'h', 0),
		// struct ip_vs_flags: PERSISTENT|ONEPACKET|SCHED1, mask all ones.
		attr(svcAttrFlags, cat(u32(0x1|0x4|0x8), u32(0xffffffff))...),
		attr(svcAttrTimeout, u32(300)...),
		attr(svcAttrNetmask, 255, 255, 255, 0), // an IPv4 mask, network order
	))
	checkBytes(t, "NEW_SERVICE", serviceRequest(cmdNewService, s, true), want)

	// Identity only, for DEL/GET: IPv6 and fwmark forms.
	k6 := Service{Protocol: UDP, Addr: mustAddr("2001:db8::1"), Port: 53}
	want = cat(genlHdr(cmdDelService), nest(cmdAttrService,
		attr(svcAttrAF, u16(10)...),
		attr(svcAttrProtocol, u16(17)...),
		attr(svcAttrAddr, mustAddr("2001:db8::1").AsSlice()...),
		attr(svcAttrPort, 0, 53),
	))
	checkBytes(t, "DEL_SERVICE ipv6", serviceRequest(cmdDelService, k6, false), want)
	fw := Service{FWMark: 7, Family: IPv6, Scheduler: "rr", Persistence: Persistence{Timeout: time.Minute, PrefixLen: 64}}
	want = cat(genlHdr(cmdSetService), nest(cmdAttrService,
		attr(svcAttrAF, u16(10)...),
		attr(svcAttrFWMark, u32(7)...),
		attr(svcAttrSchedName, 'r', 'r', 0),
		attr(svcAttrFlags, cat(u32(0x1), u32(0xffffffff))...),
		attr(svcAttrTimeout, u32(60)...),
		attr(svcAttrNetmask, u32(64)...), // an IPv6 prefix length, host order
	))
	checkBytes(t, "SET_SERVICE fwmark ipv6", serviceRequest(cmdSetService, fw, true), want)
}

func TestDestRequestLayout(t *testing.T) {
	k := ServiceKey{Protocol: TCP, Addr: mustAddr("198.18.0.1"), Port: 80}
	d := Destination{Addr: mustAddr("198.18.1.1"), Port: 8080, Forward: Tunnel, Weight: 5,
		UpperThreshold: 100, LowerThreshold: 10, TunnelType: GUE, TunnelPort: 6080, TunnelFlags: TunnelCsum}
	svcKey := nest(cmdAttrService,
		attr(svcAttrAF, u16(2)...), attr(svcAttrProtocol, u16(6)...),
		attr(svcAttrAddr, 198, 18, 0, 1), attr(svcAttrPort, 0, 80))
	want := cat(genlHdr(cmdNewDest), svcKey, nest(cmdAttrDest,
		attr(destAttrAddr, 198, 18, 1, 1),
		attr(destAttrPort, 0x1f, 0x90),
		attr(destAttrAddrFamily, u16(2)...),
		attr(destAttrFwdMethod, u32(2)...),
		attr(destAttrWeight, u32(5)...),
		attr(destAttrUThresh, u32(100)...),
		attr(destAttrLThresh, u32(10)...),
		attr(destAttrTunType, 1),
		attr(destAttrTunPort, 0x17, 0xc0), // 6080, network order
		attr(destAttrTunFlags, u16(1)...),
	))
	checkBytes(t, "NEW_DEST", destRequest(cmdNewDest, k, d, true), want)

	want = cat(genlHdr(cmdDelDest), svcKey, nest(cmdAttrDest,
		attr(destAttrAddr, 198, 18, 1, 1),
		attr(destAttrPort, 0x1f, 0x90),
		attr(destAttrAddrFamily, u16(2)...),
	))
	checkBytes(t, "DEL_DEST", destRequest(cmdDelDest, k, d, false), want)
}

func TestDaemonAndConfigLayout(t *testing.T) {
	d := Daemon{State: Backup, Interface: "eth0", SyncID: 9, MaxLen: 1400, Group: mustAddr("239.1.2.3"), Port: 8850, TTL: 3}
	want := cat(genlHdr(cmdNewDaemon), nest(cmdAttrDaemon,
		attr(daemonAttrState, u32(2)...),
		attr(daemonAttrMcastIfn, 'e', 't', 'h', '0', 0),
		attr(daemonAttrSyncID, u32(9)...),
		attr(daemonAttrSyncMaxLen, u16(1400)...),
		attr(daemonAttrMcastGroup, 239, 1, 2, 3),
		attr(daemonAttrMcastPort, u16(8850)...), // host order (nla_get_u16)
		attr(daemonAttrMcastTTL, 3),
	))
	checkBytes(t, "NEW_DAEMON", daemonRequest(d), want)
	checkBytes(t, "DEL_DAEMON", delDaemonRequest(Master), cat(genlHdr(cmdDelDaemon), nest(cmdAttrDaemon, attr(daemonAttrState, u32(1)...))))
	checkBytes(t, "SET_CONFIG", setConfigRequest(Timeouts{TCP: 900 * time.Second, UDP: 30 * time.Second}),
		cat(genlHdr(cmdSetConfig), attr(cmdAttrTimeoutTCP, u32(900)...), attr(cmdAttrTimeoutUDP, u32(30)...)))
	checkBytes(t, "FLUSH", emptyRequest(cmdFlush), genlHdr(cmdFlush))
}

// kernelService is a reply as ip_vs_genl_fill_service builds it.
func kernelService(af uint16, extra ...[]byte) []byte {
	stats32 := nest(svcAttrStats,
		attr(statsAttrConns, u32(7)...), attr(statsAttrInPkts, u32(70)...), attr(statsAttrOutPkts, u32(60)...),
		attr(statsAttrInBytes, u64(7000)...), attr(statsAttrOutBytes, u64(6000)...),
		attr(statsAttrCPS, u32(1)...), attr(statsAttrInPPS, u32(2)...), attr(statsAttrOutPPS, u32(3)...),
		attr(statsAttrInBPS, u32(4)...), attr(statsAttrOutBPS, u32(5)...))
	stats64 := nest(svcAttrStats64,
		attr(statsAttrConns, u64(math.MaxUint32+7)...), attr(statsAttrInPkts, u64(70)...), attr(statsAttrOutPkts, u64(60)...),
		attr(statsAttrInBytes, u64(1<<40)...), attr(statsAttrOutBytes, u64(6000)...),
		attr(statsAttrCPS, u64(1)...), attr(statsAttrInPPS, u64(2)...), attr(statsAttrOutPPS, u64(3)...),
		attr(statsAttrInBPS, u64(4)...), attr(statsAttrOutBPS, u64(5)...))
	inner := cat(attr(svcAttrAF, u16(af)...), cat(extra...), stats32, stats64)
	return cat(genlHdr(cmdNewService), nest(cmdAttrService, inner))
}

func TestDecodeService(t *testing.T) {
	addr16 := make([]byte, 16) // union nf_inet_addr, IPv4 in the first 4 bytes
	copy(addr16, []byte{198, 18, 0, 1})
	b := kernelService(2,
		attr(svcAttrProtocol, u16(6)...),
		attr(svcAttrAddr, addr16...),
		attr(svcAttrPort, 0, 80),
		attr(svcAttrSchedName, 'm', 'h', 0),
		attr(svcAttrPEName, 's', 'i', 'p', 0),
		attr(svcAttrFlags, cat(u32(0x1|0x2|0x8|0x10), u32(0xffffffff))...), // HASHED is the kernel's own
		attr(svcAttrTimeout, u32(300)...),
		attr(svcAttrNetmask, 255, 255, 0, 0),
	)
	si, err := decodeService(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Service{Family: IPv4, Protocol: TCP, Addr: mustAddr("198.18.0.1"), Port: 80, Scheduler: "mh",
		SchedFlags: MHFallback | MHPort, PersistenceEngine: "sip", Persistence: Persistence{Timeout: 300 * time.Second, PrefixLen: 16}}
	if si.Service != want {
		t.Fatalf("service:\n got %+v\nwant %+v", si.Service, want)
	}
	// STATS64 wins over the 32-bit STATS.
	if si.Stats.Connections != math.MaxUint32+7 || si.Stats.BytesIn != 1<<40 || si.Stats.BPSOut != 5 {
		t.Fatalf("stats = %+v, want the 64-bit ones", si.Stats)
	}

	// A kernel without STATS64: the 32-bit ones, widened.
	fw := cat(genlHdr(cmdNewService), nest(cmdAttrService,
		attr(svcAttrAF, u16(10)...), attr(svcAttrFWMark, u32(9)...),
		attr(svcAttrSchedName, 'r', 'r', 0), attr(svcAttrFlags, cat(u32(0x2), u32(0xffffffff))...),
		attr(svcAttrTimeout, u32(0)...), attr(svcAttrNetmask, u32(128)...),
		nest(svcAttrStats, attr(statsAttrConns, u32(3)...), attr(statsAttrInBytes, u64(99)...))))
	si, err = decodeService(fw)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Service{Family: IPv6, FWMark: 9, Scheduler: "rr"}); si.Service != want || si.Stats.Connections != 3 || si.Stats.BytesIn != 99 {
		t.Fatalf("fwmark service = %+v %+v", si.Service, si.Stats)
	}

	for name, b := range map[string][]byte{
		"no service nest": genlHdr(cmdNewService),
		"no family":       cat(genlHdr(cmdNewService), nest(cmdAttrService, attr(svcAttrFWMark, u32(1)...))),
		"short address":   cat(genlHdr(cmdNewService), nest(cmdAttrService, attr(svcAttrAF, u16(10)...), attr(svcAttrAddr, 1, 2, 3, 4))),
		"short port":      cat(genlHdr(cmdNewService), nest(cmdAttrService, attr(svcAttrAF, u16(2)...), attr(svcAttrPort, 1))),
		"truncated":       kernelService(2)[:13],
	} {
		if _, err := decodeService(b); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

func TestDecodeDest(t *testing.T) {
	// As an old kernel sends it: no ADDR_FAMILY, so the service's is used;
	// the zeroed tunnel fields of a non-tunnel destination are dropped.
	b := cat(genlHdr(cmdNewDest), nest(cmdAttrDest,
		attr(destAttrAddr, mustAddr("2001:db8::5").AsSlice()...),
		attr(destAttrPort, 0, 80),
		attr(destAttrFwdMethod, u32(0x3|0x80)...), // DROUTE, and a kernel-internal flag
		attr(destAttrWeight, u32(4)...),
		attr(destAttrTunType, 0), attr(destAttrTunPort, 0, 0), attr(destAttrTunFlags, u16(0)...),
		attr(destAttrUThresh, u32(50)...), attr(destAttrLThresh, u32(5)...),
		attr(destAttrActiveConns, u32(11)...), attr(destAttrInactConns, u32(12)...), attr(destAttrPersistConns, u32(13)...),
		nest(destAttrStats64, attr(statsAttrConns, u64(1<<33)...)),
	))
	di, err := decodeDest(b, IPv6)
	if err != nil {
		t.Fatal(err)
	}
	want := DestinationInfo{
		Destination: Destination{Addr: mustAddr("2001:db8::5"), Port: 80, Family: IPv6, Forward: DirectRoute, Weight: 4, UpperThreshold: 50, LowerThreshold: 5},
		ActiveConns: 11, InactiveConns: 12, PersistentConns: 13, Stats: Stats{Connections: 1 << 33},
	}
	if di != want {
		t.Fatalf("destination:\n got %+v\nwant %+v", di, want)
	}
	// A mixed-family tunnel destination: its own family wins.
	b = cat(genlHdr(cmdNewDest), nest(cmdAttrDest,
		attr(destAttrAddr, 198, 18, 1, 1), attr(destAttrPort, 0, 80), attr(destAttrAddrFamily, u16(2)...),
		attr(destAttrFwdMethod, u32(2)...), attr(destAttrTunType, 2), attr(destAttrTunPort, 0, 0), attr(destAttrTunFlags, u16(1)...)))
	di, err = decodeDest(b, IPv6)
	if err != nil {
		t.Fatal(err)
	}
	if d := di.Destination; d.Family != IPv4 || d.Addr != mustAddr("198.18.1.1") || d.Forward != Tunnel || d.TunnelType != GRE || d.TunnelFlags != TunnelCsum {
		t.Fatalf("tunnel destination = %+v", d)
	}
}

func TestDecodeDaemonTimeoutsInfo(t *testing.T) {
	b := cat(genlHdr(cmdNewDaemon), nest(cmdAttrDaemon,
		attr(daemonAttrState, u32(1)...), attr(daemonAttrMcastIfn, 'v', 's', '0', 0), attr(daemonAttrSyncID, u32(5)...),
		attr(daemonAttrSyncMaxLen, u16(1472)...), attr(daemonAttrMcastPort, u16(8848)...), attr(daemonAttrMcastTTL, 1),
		attr(daemonAttrMcastGroup6, mustAddr("ff02::81").AsSlice()...)))
	d, err := decodeDaemon(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Daemon{State: Master, Interface: "vs0", SyncID: 5, MaxLen: 1472, Group: mustAddr("ff02::81"), Port: 8848, TTL: 1}); d != want {
		t.Fatalf("daemon = %+v, want %+v", d, want)
	}
	to, err := decodeTimeouts(cat(genlHdr(cmdSetConfig), attr(cmdAttrTimeoutTCP, u32(900)...), attr(cmdAttrTimeoutTCPFin, u32(120)...), attr(cmdAttrTimeoutUDP, u32(300)...)))
	if err != nil || to != (Timeouts{TCP: 900 * time.Second, TCPFin: 120 * time.Second, UDP: 300 * time.Second}) {
		t.Fatalf("timeouts = %+v, %v", to, err)
	}
	info, err := decodeInfo(cat(genlHdr(cmdSetInfo), attr(infoAttrVersion, u32(0x010201)...), attr(infoAttrConnTabSize, u32(4096)...)))
	if err != nil || info.Version.String() != "1.2.1" || info.ConnTableSize != 4096 {
		t.Fatalf("info = %+v (%v), %v", info, info.Version, err)
	}
	if _, err := decodeInfo(genlHdr(cmdSetInfo)); err == nil {
		t.Fatal("info without a version decoded without error")
	}
}

// The request attributes of a service or destination are those the kernel
// replies with, so decoding a request must give back what was encoded.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, tc := range roundTripCases {
		si, err := decodeService(serviceRequest(cmdNewService, tc.svc, true))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if want := withFamily(tc.svc); si.Service != want {
			t.Fatalf("%s: service\n got %+v\nwant %+v", tc.name, si.Service, want)
		}
		for _, d := range tc.dests {
			di, err := decodeDest(destRequest(cmdNewDest, tc.svc.Key(), d, true), tc.svc.Key().Family)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			want := d
			want.Family = d.family()
			if di.Destination != want {
				t.Fatalf("%s: destination\n got %+v\nwant %+v", tc.name, di.Destination, want)
			}
		}
	}
}

var roundTripCases = []struct {
	name  string
	svc   Service
	dests []Destination
}{
	{"ipv4", Service{Protocol: TCP, Addr: mustAddr("198.18.0.1"), Port: 80, Scheduler: "rr"},
		[]Destination{{Addr: mustAddr("198.18.1.1"), Port: 1, Weight: 1, UpperThreshold: 9, LowerThreshold: 3}}},
	{"ipv6 persistent", Service{Protocol: SCTP, Addr: mustAddr("2001:db8::1"), Port: 9, Scheduler: "wlc", PersistenceEngine: "sip",
		Persistence: Persistence{Timeout: time.Hour, PrefixLen: 48}},
		[]Destination{{Addr: mustAddr("198.18.1.1"), Port: 2, Forward: Tunnel, TunnelType: GUE, TunnelPort: 1, TunnelFlags: TunnelRemCsum}}},
	{"fwmark", Service{FWMark: 1, Family: IPv4, Scheduler: "mh", SchedFlags: MHPort, OnePacket: true},
		[]Destination{{Addr: mustAddr("198.18.1.2"), Forward: LocalNode}, {Addr: mustAddr("198.18.1.3"), Forward: Bypass, Weight: math.MaxInt32}}},
}
