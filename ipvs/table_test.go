package ipvs

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/inet"
)

// listedTable is the table whose listings Debian's ipvsadm 1.31 printed
// into testdata/table (in a VM, after UDP traffic to three of the
// services), in an order of our own: reversed from the kernel's, so that
// the sorting shows.
func listedTable() Snapshot {
	v4, v6 := mustAddr, mustAddr
	svc := func(s Service, dests ...DestinationInfo) ServiceSnapshot {
		return ServiceSnapshot{ServiceInfo: ServiceInfo{Service: s}, Destinations: dests}
	}
	dest := func(addr string, port uint16, fwd ForwardMethod, weight uint32) DestinationInfo {
		return DestinationInfo{Destination: Destination{Addr: mustAddr(addr), Port: port, Forward: fwd, Weight: weight}}
	}
	tun := func(addr string, weight uint32, tt TunnelType, port uint16, flags TunnelFlags) DestinationInfo {
		d := dest(addr, 80, Tunnel, weight)
		d.TunnelType, d.TunnelPort, d.TunnelFlags = tt, port, flags
		return d
	}
	counted := func(s ServiceSnapshot, st Stats) ServiceSnapshot {
		s.Stats = st
		for i := range s.Destinations {
			s.Destinations[i].Stats = st
		}
		return s
	}
	persist := func(secs int, plen uint8) Persistence {
		return Persistence{Timeout: time.Duration(secs) * time.Second, PrefixLen: plen}
	}
	thresholds := func(d DestinationInfo, upper, lower uint32) DestinationInfo {
		d.UpperThreshold, d.LowerThreshold = upper, lower
		return d
	}
	tcp := func(addr string, port uint16, sched string) Service {
		return Service{Protocol: TCP, Addr: v4(addr), Port: port, Scheduler: sched}
	}
	udp := func(addr string, port uint16, sched string) Service {
		return Service{Protocol: UDP, Addr: v4(addr), Port: port, Scheduler: sched}
	}
	withFlags := func(s Service, f SchedFlags) Service { s.SchedFlags = f; return s }
	withPersist := func(s Service, p Persistence) Service { s.Persistence = p; return s }

	sctp := Service{Protocol: SCTP, Addr: v4("198.18.0.3"), Port: 3868, Scheduler: "rr"}
	ops := udp("198.18.0.2", 53, "lc")
	ops.OnePacket, ops.Persistence = true, persist(300, 24)
	sip := withPersist(udp("198.18.0.5", 5060, "rr"), persist(60, 0))
	sip.PersistenceEngine = "sip"
	ops9 := udp("198.18.0.9", 53, "rr")
	ops9.OnePacket = true
	v6svc := func(addr string, port uint16, sched string, p Persistence) Service {
		return Service{Protocol: TCP, Addr: v6(addr), Port: port, Scheduler: sched, Persistence: p}
	}

	kernelOrder := []ServiceSnapshot{
		svc(withPersist(tcp("198.18.0.6", 0, "rr"), persist(360, 0))),
		svc(v6svc("2001:db8::1", 443, "wlc", persist(600, 64)),
			dest("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", 65535, Masq, 3),
			dest("2001:db8:1::1", 443, Route, 3)),
		svc(tcp("198.18.0.12", 3, "fo")),
		svc(tcp("198.18.0.12", 65535, "ovf")),
		svc(tcp("198.18.0.12", 1, "lblcr")),
		svc(ops, dest("198.18.1.3", 53, Masq, 1)),
		counted(svc(ops9, dest("198.18.200.2", 53, Masq, 1)),
			Stats{Connections: 143457, PacketsIn: 143457, BytesIn: 4220252, CPS: 2039, PPSIn: 2039, BPSIn: 59147}),
		counted(svc(udp("198.18.0.10", 53, "rr"), dest("198.18.200.3", 53, Masq, 1)),
			Stats{Connections: 1, PacketsIn: 2000, BytesIn: 120056000, BPSIn: 18112}),
		counted(svc(udp("198.18.0.11", 53, "rr"), dest("198.18.200.4", 53, Masq, 1)),
			Stats{Connections: 1, PacketsIn: 20000, BytesIn: 1200560000, PPSIn: 14, BPSIn: 838016}),
		svc(withFlags(tcp("198.18.0.7", 81, "rr"), SchedFlag1|SchedFlag2|SchedFlag3)),
		svc(withFlags(tcp("198.18.0.4", 80, "mh"), MHFallback|MHPort),
			tun("198.18.1.8", 1, IPIP, 0, 0),
			tun("198.18.1.7", 1, GRE, 0, TunnelCsum),
			tun("198.18.1.6", 1, GUE, 6080, TunnelCsum),
			tun("198.18.1.9", 2, GUE, 6081, TunnelRemCsum)),
		svc(withFlags(tcp("198.18.0.7", 82, "rr"), SchedFlag2)),
		svc(tcp("198.18.0.1", 80, "rr"),
			thresholds(dest("198.18.1.10", 8080, Masq, 2147483647), 7, 0),
			dest("198.18.200.1", 80, Route, 1),
			dest("198.18.1.1", 8080, Masq, 1),
			thresholds(dest("198.18.1.2", 8080, Masq, 5), 100, 50)),
		svc(withFlags(tcp("198.18.0.8", 82, "sh"), SHPort)),
		svc(withFlags(tcp("198.18.0.8", 83, "mh"), MHFallback)),
		svc(sctp, dest("198.18.1.5", 3868, Route, 0)),
		svc(sip, dest("198.18.1.11", 5060, Masq, 1)),
		svc(v6svc("2001:db8::2", 80, "rr", persist(30, 0))),
		svc(v6svc("2001:db8::3", 80, "rr", persist(30, 128))),
		svc(Service{FWMark: 7, Family: IPv4, Scheduler: "wrr"}, dest("198.18.1.4", 0, Route, 2)),
		svc(Service{FWMark: 8, Family: IPv4, Scheduler: "sh", SchedFlags: SHPort}),
		svc(Service{FWMark: 8, Family: IPv6, Scheduler: "sh", SchedFlags: SHFallback | SHPort},
			dest("2001:db8:1::2", 0, Route, 1)),
		svc(Service{FWMark: 0xffffffff, Family: IPv4, Scheduler: "wrr", Persistence: persist(10, 16)}),
	}
	slices.Reverse(kernelOrder)
	for _, s := range kernelOrder {
		slices.Reverse(s.Destinations)
	}
	return Snapshot{Services: kernelOrder}
}

// TestTableGolden: each listing of listedTable is what ipvsadm printed.
func TestTableGolden(t *testing.T) {
	info := &Info{Version: 0x010201, ConnTableSize: 4096}
	for _, tc := range []struct {
		file string
		opts TableOptions
	}{
		{"conns.txt", TableOptions{Info: info}},
		{"stats.txt", TableOptions{Info: info, Format: TableStats}},
		{"stats-exact.txt", TableOptions{Info: info, Format: TableStats, Exact: true}},
		{"rate.txt", TableOptions{Info: info, Format: TableRate}},
		{"thresholds.txt", TableOptions{Info: info, Format: TableThresholds}},
		{"persistent-conn.txt", TableOptions{Info: info, Format: TablePersistentConn}},
		{"tun-info.txt", TableOptions{Info: info, Format: TableTunnelInfo}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			want, err := os.ReadFile("testdata/table/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := listedTable().WriteTable(&b, tc.opts); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != string(want) {
				t.Fatalf("WriteTable(%+v) (-want +got):\n%s", tc.opts, lineDiff(string(want), got))
			}
		})
	}
}

// TestTableEmpty: an empty table is its headings, as ipvsadm prints them.
func TestTableEmpty(t *testing.T) {
	for _, tc := range []struct {
		opts TableOptions
		want string
	}{
		{TableOptions{Info: &Info{Version: 0x010201, ConnTableSize: 1 << 20}},
			"IP Virtual Server version 1.2.1 (size=1048576)\n" +
				"Prot LocalAddress:Port Scheduler Flags\n" +
				"  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n"},
		{TableOptions{Format: TableStats},
			"Prot LocalAddress:Port               Conns   InPkts  OutPkts  InBytes OutBytes\n" +
				"  -> RemoteAddress:Port\n"},
		{TableOptions{Format: TableRate, Exact: true},
			"Prot LocalAddress:Port                 CPS    InPPS   OutPPS    InBPS   OutBPS\n" +
				"  -> RemoteAddress:Port\n"},
		{TableOptions{Format: TableThresholds},
			"Prot LocalAddress:Port            Uthreshold Lthreshold ActiveConn InActConn \n" +
				"  -> RemoteAddress:Port\n"},
		{TableOptions{Format: TablePersistentConn},
			"Prot LocalAddress:Port            Weight    PersistConn ActiveConn InActConn \n" +
				"  -> RemoteAddress:Port\n"},
	} {
		if got := string(Snapshot{}.AppendTable(nil, tc.opts)); got != tc.want {
			t.Errorf("AppendTable(%+v) (-want +got):\n%s", tc.opts, lineDiff(tc.want, got))
		}
	}
}

// TestTableNumbers: counters and rates at each edge of ipvsadm's scaling
// (the limits its binary compares with: below 10^8 in full, then K below
// 10^9, M below 10^11, G below 10^14, T beyond), and in full with Exact;
// a destination's connection and packet rates are never scaled.
func TestTableNumbers(t *testing.T) {
	st := func(v uint64) Stats {
		return Stats{Connections: v, PacketsIn: v, PacketsOut: v, BytesIn: v, BytesOut: v,
			CPS: v, PPSIn: v, PPSOut: v, BPSIn: v, BPSOut: v}
	}
	var snap Snapshot
	for i, v := range []uint64{99_999_999, 100_000_000, 999_999_999, 1_000_000_000,
		99_999_999_999, 100_000_000_000, 99_999_999_999_999, 100_000_000_000_000, 1<<64 - 1} {
		snap.Services = append(snap.Services, ServiceSnapshot{
			ServiceInfo:  ServiceInfo{Service: Service{Protocol: TCP, Addr: mustAddr("198.18.0.1"), Port: uint16(i + 1), Scheduler: "rr"}, Stats: st(v)},
			Destinations: []DestinationInfo{{Destination: Destination{Addr: mustAddr("198.18.1.1"), Port: 80, Forward: Local, Weight: 1}, Stats: st(v)}},
		})
	}
	head := func(cols string) string { return "Prot LocalAddress:Port     " + cols + "\n  -> RemoteAddress:Port\n" }
	stats := head("          Conns   InPkts  OutPkts  InBytes OutBytes")
	rates := head("            CPS    InPPS   OutPPS    InBPS   OutBPS")
	statsExact, ratesExact := stats, rates
	for i, n := range []struct{ scaled, full string }{
		{" 99999999", " 99999999"},
		{"  100000K", " 100000000"},
		{"  999999K", " 999999999"},
		{"    1000M", " 1000000000"},
		{"   99999M", " 99999999999"},
		{"     100G", " 100000000000"},
		{"   99999G", " 99999999999999"},
		{"     100T", " 100000000000000"},
		{"18446744T", " 18446744073709551615"},
	} {
		svc := pad("TCP  198.18.0.1:"+strconv.Itoa(i+1), 33)
		dst := "  -> " + pad("198.18.1.1:80", 28)
		stats += svc + rep(n.scaled, 5) + "\n" + dst + rep(n.scaled, 5) + "\n"
		statsExact += svc + rep(n.full, 5) + "\n" + dst + rep(n.full, 5) + "\n"
		rates += svc + rep(n.scaled, 5) + "\n" + dst + rep(n.full, 3) + rep(n.scaled, 2) + "\n"
		ratesExact += svc + rep(n.full, 5) + "\n" + dst + rep(n.full, 5) + "\n"
	}
	for _, tc := range []struct {
		opts TableOptions
		want string
	}{
		{TableOptions{Format: TableStats}, stats},
		{TableOptions{Format: TableStats, Exact: true}, statsExact},
		{TableOptions{Format: TableRate}, rates},
		{TableOptions{Format: TableRate, Exact: true}, ratesExact},
	} {
		if got := string(snap.AppendTable(nil, tc.opts)); got != tc.want {
			t.Errorf("AppendTable(%+v) (-want +got):\n%s", tc.opts, lineDiff(tc.want, got))
		}
	}
}

// TestTableNames: what ipvsadm names and what it does not.
func TestTableNames(t *testing.T) {
	snap := Snapshot{Services: []ServiceSnapshot{
		{ServiceInfo: ServiceInfo{Service: Service{Protocol: inet.UDPLite, Addr: mustAddr("198.18.0.1"), Port: 5, Scheduler: "rr"}},
			Destinations: []DestinationInfo{
				{Destination: Destination{Addr: mustAddr("198.18.1.1"), Port: 5, Forward: Bypass, Weight: 1}},
				{Destination: Destination{Addr: mustAddr("198.18.1.2"), Port: 5, Forward: Local, Weight: 1}},
			}},
		{ServiceInfo: ServiceInfo{Service: Service{Protocol: SCTP, Addr: mustAddr("2001:db8::1"), Port: 9, Scheduler: "sh",
			Persistence: Persistence{Timeout: time.Hour, PrefixLen: 48}, SchedFlags: SHFallback}}},
	}}
	want := "Prot LocalAddress:Port Scheduler Flags\n" +
		"  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n" +
		"UDPLITE 198.18.0.1:5 rr\n" +
		"  -> 198.18.1.1:5                 bypass  1      0          0         \n" +
		"  -> 198.18.1.2:5                 Local   1      0          0         \n" +
		"SCTP [2001:db8::1]:9 sh (sh-fallback) persistent 3600 mask 48\n"
	if got := string(snap.AppendTable(nil, TableOptions{})); got != want {
		t.Errorf("AppendTable (-want +got):\n%s", lineDiff(want, got))
	}
}

// tunnelTable is a service whose tunnels have no checksum, or the longest
// GUE port, and ipvsadm -Ln --tun-info's listing of it (seen in the VM).
func tunnelTable() (Snapshot, string) {
	tun := func(addr string, tt TunnelType, port uint16, flags TunnelFlags) DestinationInfo {
		return DestinationInfo{Destination: Destination{Addr: mustAddr(addr), Port: 80, Forward: Tunnel, Weight: 1,
			TunnelType: tt, TunnelPort: port, TunnelFlags: flags}}
	}
	snap := Snapshot{Services: []ServiceSnapshot{{
		ServiceInfo: ServiceInfo{Service: Service{Protocol: TCP, Addr: mustAddr("198.18.0.4"), Port: 80, Scheduler: "rr"}},
		Destinations: []DestinationInfo{
			tun("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", GUE, 65535, TunnelRemCsum),
			{Destination: Destination{Addr: mustAddr("198.18.1.6"), Port: 80, Weight: 1}},
			tun("198.18.1.5", IPIP, 0, 0),
			tun("198.18.1.4", GUE, 65535, 0),
			tun("198.18.1.2", GRE, 0, 0),
			tun("198.18.1.1", GUE, 6080, 0),
		},
	}}}
	return snap, "Prot LocalAddress:Port Scheduler Flags\n" +
		"  -> RemoteAddress:Port           Forward TunnelInfo    Weight ActiveConn InActConn\n" +
		"TCP  198.18.0.4:80 rr\n" +
		"  -> 198.18.1.1:80                Tunnel  gue:6080:-c   1      0          0         \n" +
		"  -> 198.18.1.2:80                Tunnel  gre:-c        1      0          0         \n" +
		"  -> 198.18.1.4:80                Tunnel  gue:65535:-c  1      0          0         \n" +
		"  -> 198.18.1.5:80                Tunnel  ipip          1      0          0         \n" +
		"  -> 198.18.1.6:80                Masq    n/a           1      0          0         \n" +
		"  -> [2001:db8:ffff:ffff:ffff:ffff:ffff:ffff]:80 Tunnel  gue:65535:r+c 1      0          0         \n"
}

func TestTableTunnels(t *testing.T) {
	snap, want := tunnelTable()
	if got := string(snap.AppendTable(nil, TableOptions{Format: TableTunnelInfo})); got != want {
		t.Errorf("AppendTable (-want +got):\n%s", lineDiff(want, got))
	}
}

// TestTableWriteError: WriteTable returns the writer's error.
func TestTableWriteError(t *testing.T) {
	boom := errors.New("boom")
	if err := listedTable().WriteTable(failWriter{boom}, TableOptions{}); !errors.Is(err, boom) {
		t.Fatalf("WriteTable to a failing writer: %v, want %v", err, boom)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

func pad(s string, n int) string { return s + strings.Repeat(" ", max(n-len(s), 0)) }
func rep(s string, n int) string { return strings.Repeat(s, n) }
