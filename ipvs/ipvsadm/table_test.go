package ipvsadm

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/ipvs"

	"github.com/ipvskit/ipvskit/inet"
)

// listedTable is the table whose listings Debian's ipvsadm 1.31 printed
// into testdata/table (in a VM, after UDP traffic to three of the
// services), in an order of our own: reversed from the kernel's, so that
// the sorting shows.
func listedTable() ipvs.Snapshot {
	v4, v6 := mustAddr, mustAddr
	svc := func(s ipvs.Service, dests ...ipvs.DestinationInfo) ipvs.ServiceSnapshot {
		return ipvs.ServiceSnapshot{ServiceInfo: ipvs.ServiceInfo{Service: s}, Destinations: dests}
	}
	dest := func(addr string, port uint16, fwd ipvs.ForwardMethod, weight uint32) ipvs.DestinationInfo {
		return ipvs.DestinationInfo{Destination: ipvs.Destination{Addr: mustAddr(addr), Port: port, Forward: fwd, Weight: weight}}
	}
	tun := func(addr string, weight uint32, tt ipvs.TunnelType, port uint16, flags ipvs.TunnelFlags) ipvs.DestinationInfo {
		d := dest(addr, 80, ipvs.Tunnel, weight)
		d.TunnelType, d.TunnelPort, d.TunnelFlags = tt, port, flags
		return d
	}
	counted := func(s ipvs.ServiceSnapshot, st ipvs.Stats) ipvs.ServiceSnapshot {
		s.Stats = st
		for i := range s.Destinations {
			s.Destinations[i].Stats = st
		}
		return s
	}
	persist := func(secs int, plen uint8) ipvs.Persistence {
		return ipvs.Persistence{Timeout: time.Duration(secs) * time.Second, PrefixLen: plen}
	}
	thresholds := func(d ipvs.DestinationInfo, upper, lower uint32) ipvs.DestinationInfo {
		d.UpperThreshold, d.LowerThreshold = upper, lower
		return d
	}
	tcp := func(addr string, port uint16, sched string) ipvs.Service {
		return ipvs.Service{Protocol: ipvs.TCP, Addr: v4(addr), Port: port, Scheduler: sched}
	}
	udp := func(addr string, port uint16, sched string) ipvs.Service {
		return ipvs.Service{Protocol: ipvs.UDP, Addr: v4(addr), Port: port, Scheduler: sched}
	}
	withFlags := func(s ipvs.Service, f ipvs.SchedFlags) ipvs.Service { s.SchedFlags = f; return s }
	withPersist := func(s ipvs.Service, p ipvs.Persistence) ipvs.Service { s.Persistence = p; return s }

	sctp := ipvs.Service{Protocol: ipvs.SCTP, Addr: v4("198.18.0.3"), Port: 3868, Scheduler: "rr"}
	ops := udp("198.18.0.2", 53, "lc")
	ops.OnePacket, ops.Persistence = true, persist(300, 24)
	sip := withPersist(udp("198.18.0.5", 5060, "rr"), persist(60, 0))
	sip.PersistenceEngine = "sip"
	ops9 := udp("198.18.0.9", 53, "rr")
	ops9.OnePacket = true
	v6svc := func(addr string, port uint16, sched string, p ipvs.Persistence) ipvs.Service {
		return ipvs.Service{Protocol: ipvs.TCP, Addr: v6(addr), Port: port, Scheduler: sched, Persistence: p}
	}

	kernelOrder := []ipvs.ServiceSnapshot{
		svc(withPersist(tcp("198.18.0.6", 0, "rr"), persist(360, 0))),
		svc(v6svc("2001:db8::1", 443, "wlc", persist(600, 64)),
			dest("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", 65535, ipvs.Masq, 3),
			dest("2001:db8:1::1", 443, ipvs.DirectRoute, 3)),
		svc(tcp("198.18.0.12", 3, "fo")),
		svc(tcp("198.18.0.12", 65535, "ovf")),
		svc(tcp("198.18.0.12", 1, "lblcr")),
		svc(ops, dest("198.18.1.3", 53, ipvs.Masq, 1)),
		counted(svc(ops9, dest("198.18.200.2", 53, ipvs.Masq, 1)),
			ipvs.Stats{Connections: 143457, PacketsIn: 143457, BytesIn: 4220252, CPS: 2039, PPSIn: 2039, BPSIn: 59147}),
		counted(svc(udp("198.18.0.10", 53, "rr"), dest("198.18.200.3", 53, ipvs.Masq, 1)),
			ipvs.Stats{Connections: 1, PacketsIn: 2000, BytesIn: 120056000, BPSIn: 18112}),
		counted(svc(udp("198.18.0.11", 53, "rr"), dest("198.18.200.4", 53, ipvs.Masq, 1)),
			ipvs.Stats{Connections: 1, PacketsIn: 20000, BytesIn: 1200560000, PPSIn: 14, BPSIn: 838016}),
		svc(withFlags(tcp("198.18.0.7", 81, "rr"), ipvs.SchedFlag1|ipvs.SchedFlag2|ipvs.SchedFlag3)),
		svc(withFlags(tcp("198.18.0.4", 80, "mh"), ipvs.MHFallback|ipvs.MHPort),
			tun("198.18.1.8", 1, ipvs.IPIP, 0, 0),
			tun("198.18.1.7", 1, ipvs.GRE, 0, ipvs.TunnelCsum),
			tun("198.18.1.6", 1, ipvs.GUE, 6080, ipvs.TunnelCsum),
			tun("198.18.1.9", 2, ipvs.GUE, 6081, ipvs.TunnelRemCsum)),
		svc(withFlags(tcp("198.18.0.7", 82, "rr"), ipvs.SchedFlag2)),
		svc(tcp("198.18.0.1", 80, "rr"),
			thresholds(dest("198.18.1.10", 8080, ipvs.Masq, 2147483647), 7, 0),
			dest("198.18.200.1", 80, ipvs.DirectRoute, 1),
			dest("198.18.1.1", 8080, ipvs.Masq, 1),
			thresholds(dest("198.18.1.2", 8080, ipvs.Masq, 5), 100, 50)),
		svc(withFlags(tcp("198.18.0.8", 82, "sh"), ipvs.SHPort)),
		svc(withFlags(tcp("198.18.0.8", 83, "mh"), ipvs.MHFallback)),
		svc(sctp, dest("198.18.1.5", 3868, ipvs.DirectRoute, 0)),
		svc(sip, dest("198.18.1.11", 5060, ipvs.Masq, 1)),
		svc(v6svc("2001:db8::2", 80, "rr", persist(30, 0))),
		svc(v6svc("2001:db8::3", 80, "rr", persist(30, 128))),
		svc(ipvs.Service{FWMark: 7, Family: ipvs.IPv4, Scheduler: "wrr"}, dest("198.18.1.4", 0, ipvs.DirectRoute, 2)),
		svc(ipvs.Service{FWMark: 8, Family: ipvs.IPv4, Scheduler: "sh", SchedFlags: ipvs.SHPort}),
		svc(ipvs.Service{FWMark: 8, Family: ipvs.IPv6, Scheduler: "sh", SchedFlags: ipvs.SHFallback | ipvs.SHPort},
			dest("2001:db8:1::2", 0, ipvs.DirectRoute, 1)),
		svc(ipvs.Service{FWMark: 0xffffffff, Family: ipvs.IPv4, Scheduler: "wrr", Persistence: persist(10, 16)}),
	}
	slices.Reverse(kernelOrder)
	for _, s := range kernelOrder {
		slices.Reverse(s.Destinations)
	}
	return ipvs.Snapshot{Services: kernelOrder}
}

// TestTableGolden: each listing of listedTable is what ipvsadm printed.
func TestTableGolden(t *testing.T) {
	info := &ipvs.Info{Version: 0x010201, ConnTableSize: 4096}
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
			if err := WriteTable(&b, listedTable(), tc.opts); err != nil {
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
		{TableOptions{Info: &ipvs.Info{Version: 0x010201, ConnTableSize: 1 << 20}},
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
		if got := string(AppendTable(nil, ipvs.Snapshot{}, tc.opts)); got != tc.want {
			t.Errorf("AppendTable(%+v) (-want +got):\n%s", tc.opts, lineDiff(tc.want, got))
		}
	}
}

// TestTableNumbers: counters and rates at each edge of ipvsadm's scaling
// (the limits its binary compares with: below 10^8 in full, then K below
// 10^9, M below 10^11, G below 10^14, T beyond), and in full with Exact;
// a destination's connection and packet rates are never scaled.
func TestTableNumbers(t *testing.T) {
	st := func(v uint64) ipvs.Stats {
		return ipvs.Stats{Connections: v, PacketsIn: v, PacketsOut: v, BytesIn: v, BytesOut: v,
			CPS: v, PPSIn: v, PPSOut: v, BPSIn: v, BPSOut: v}
	}
	var snap ipvs.Snapshot
	for i, v := range []uint64{99_999_999, 100_000_000, 999_999_999, 1_000_000_000,
		99_999_999_999, 100_000_000_000, 99_999_999_999_999, 100_000_000_000_000, 1<<64 - 1} {
		snap.Services = append(snap.Services, ipvs.ServiceSnapshot{
			ServiceInfo:  ipvs.ServiceInfo{Service: ipvs.Service{Protocol: ipvs.TCP, Addr: mustAddr("198.18.0.1"), Port: uint16(i + 1), Scheduler: "rr"}, Stats: st(v)},
			Destinations: []ipvs.DestinationInfo{{Destination: ipvs.Destination{Addr: mustAddr("198.18.1.1"), Port: 80, Forward: ipvs.LocalNode, Weight: 1}, Stats: st(v)}},
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
		if got := string(AppendTable(nil, snap, tc.opts)); got != tc.want {
			t.Errorf("AppendTable(%+v) (-want +got):\n%s", tc.opts, lineDiff(tc.want, got))
		}
	}
}

// TestTableNames: what ipvsadm names and what it does not.
func TestTableNames(t *testing.T) {
	snap := ipvs.Snapshot{Services: []ipvs.ServiceSnapshot{
		{ServiceInfo: ipvs.ServiceInfo{Service: ipvs.Service{Protocol: inet.UDPLite, Addr: mustAddr("198.18.0.1"), Port: 5, Scheduler: "rr"}},
			Destinations: []ipvs.DestinationInfo{
				{Destination: ipvs.Destination{Addr: mustAddr("198.18.1.1"), Port: 5, Forward: ipvs.Bypass, Weight: 1}},
				{Destination: ipvs.Destination{Addr: mustAddr("198.18.1.2"), Port: 5, Forward: ipvs.LocalNode, Weight: 1}},
			}},
		{ServiceInfo: ipvs.ServiceInfo{Service: ipvs.Service{Protocol: ipvs.SCTP, Addr: mustAddr("2001:db8::1"), Port: 9, Scheduler: "sh",
			Persistence: ipvs.Persistence{Timeout: time.Hour, PrefixLen: 48}, SchedFlags: ipvs.SHFallback}}},
	}}
	want := "Prot LocalAddress:Port Scheduler Flags\n" +
		"  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n" +
		"UDPLITE 198.18.0.1:5 rr\n" +
		"  -> 198.18.1.1:5                 bypass  1      0          0         \n" +
		"  -> 198.18.1.2:5                 Local   1      0          0         \n" +
		"SCTP [2001:db8::1]:9 sh (sh-fallback) persistent 3600 mask 48\n"
	if got := string(AppendTable(nil, snap, TableOptions{})); got != want {
		t.Errorf("AppendTable (-want +got):\n%s", lineDiff(want, got))
	}
}

// tunnelTable is a service whose tunnels have no checksum, or the longest
// GUE port, and ipvsadm -Ln --tun-info's listing of it (seen in the VM).
func tunnelTable() (ipvs.Snapshot, string) {
	tun := func(addr string, tt ipvs.TunnelType, port uint16, flags ipvs.TunnelFlags) ipvs.DestinationInfo {
		return ipvs.DestinationInfo{Destination: ipvs.Destination{Addr: mustAddr(addr), Port: 80, Forward: ipvs.Tunnel, Weight: 1,
			TunnelType: tt, TunnelPort: port, TunnelFlags: flags}}
	}
	snap := ipvs.Snapshot{Services: []ipvs.ServiceSnapshot{{
		ServiceInfo: ipvs.ServiceInfo{Service: ipvs.Service{Protocol: ipvs.TCP, Addr: mustAddr("198.18.0.4"), Port: 80, Scheduler: "rr"}},
		Destinations: []ipvs.DestinationInfo{
			tun("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", ipvs.GUE, 65535, ipvs.TunnelRemCsum),
			{Destination: ipvs.Destination{Addr: mustAddr("198.18.1.6"), Port: 80, Weight: 1}},
			tun("198.18.1.5", ipvs.IPIP, 0, 0),
			tun("198.18.1.4", ipvs.GUE, 65535, 0),
			tun("198.18.1.2", ipvs.GRE, 0, 0),
			tun("198.18.1.1", ipvs.GUE, 6080, 0),
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
	if got := string(AppendTable(nil, snap, TableOptions{Format: TableTunnelInfo})); got != want {
		t.Errorf("AppendTable (-want +got):\n%s", lineDiff(want, got))
	}
}

// TestTableWriteError: WriteTable returns the writer's error.
func TestTableWriteError(t *testing.T) {
	boom := errors.New("boom")
	if err := WriteTable(failWriter{boom}, listedTable(), TableOptions{}); !errors.Is(err, boom) {
		t.Fatalf("WriteTable to a failing writer: %v, want %v", err, boom)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

func pad(s string, n int) string { return s + strings.Repeat(" ", max(n-len(s), 0)) }
func rep(s string, n int) string { return strings.Repeat(s, n) }
