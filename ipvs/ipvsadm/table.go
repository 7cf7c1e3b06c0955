package ipvsadm

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ipvskit/ipvskit/ipvs"
)

// TableFormat chooses the columns of a table that WriteTable renders: those
// of `ipvsadm -Ln`, or of -Ln with one of its listing options. The zero
// value is plain -Ln.
type TableFormat int

// Table formats. Each is one ipvsadm listing option; ipvsadm lets one
// option win when several are given (--stats before --rate before
// --thresholds before --persistent-conn before --tun-info), so a table has
// one format.
const (
	// TableConns is `ipvsadm -Ln`: each service's scheduler and flags
	// (scheduler flags, persistence, persistence engine, one-packet
	// scheduling), and each destination's forwarding method, weight and
	// active and inactive connections.
	TableConns TableFormat = iota
	// TableStats is `ipvsadm -Ln --stats`: connections, packets and bytes
	// in and out, for services and destinations.
	TableStats
	// TableRate is `ipvsadm -Ln --rate`: connections, packets and bytes per
	// second, in and out, for services and destinations.
	TableRate
	// TableThresholds is `ipvsadm -Ln --thresholds`: each destination's
	// upper and lower connection thresholds and connection counts.
	TableThresholds
	// TablePersistentConn is `ipvsadm -Ln --persistent-conn`: each
	// destination's weight, persistence templates and connection counts.
	TablePersistentConn
	// TableTunnelInfo is `ipvsadm -Ln --tun-info`: -Ln with each
	// destination's tunnel after its forwarding method: "ipip",
	// "gue:PORT:CSUM" or "gre:CSUM", where CSUM is "-c" (no checksum), "+c"
	// (TunnelCsum) or "r+c" (TunnelRemCsum); "n/a" for other methods.
	TableTunnelInfo
)

func (f TableFormat) String() string {
	switch f {
	case TableConns:
		return "conns"
	case TableStats:
		return "stats"
	case TableRate:
		return "rate"
	case TableThresholds:
		return "thresholds"
	case TablePersistentConn:
		return "persistent-conn"
	case TableTunnelInfo:
		return "tun-info"
	}
	return "TableFormat(" + strconv.Itoa(int(f)) + ")"
}

// TableOptions are WriteTable's options. The zero value renders the table
// `ipvsadm -Ln` prints, without its first line.
type TableOptions struct {
	// Format chooses the columns; the zero value is TableConns (-Ln).
	Format TableFormat
	// Exact prints counters and rates in full, as --exact does; otherwise
	// numbers of nine digits or more are shown in thousands (K), millions
	// (M), billions (G) or trillions (T), rounded down, as ipvsadm does.
	Exact bool
	// Info, when set, adds ipvsadm's first line, "IP Virtual Server
	// version 1.2.1 (size=4096)", from the kernel's Info (ipvs.Client.Info).
	// An ipvs.Snapshot does not carry it; without it the table starts at the
	// column headings, as ipvsadm's listing of a single service does.
	Info *ipvs.Info
}

// WriteTable writes the table s to w as `ipvsadm -Ln` lists the same table (with
// --stats, --rate, --thresholds, --persistent-conn or --exact as opts say),
// byte for byte: the same headings, column widths, trailing spaces and
// names (TCP, UDP, SCTP, FWM; Masq, Route, Tunnel, Local), IPv6 addresses
// in brackets, firewall marks as ipvsadm prints them (a signed number:
// "FWM  -1" for 0xffffffff). Services and destinations are sorted as
// ipvsadm sorts them (its default, --sort), whatever their order in s.
//
// A value ipvsadm has no name for (a protocol other than TCP, UDP and
// SCTP, an ipvs.Bypass destination) is shown by its String method, upper-cased
// for protocols; WriteTable only fails when w does.
func WriteTable(w io.Writer, s ipvs.Snapshot, opts TableOptions) error {
	_, err := w.Write(AppendTable(nil, s, opts))
	return err
}

// AppendTable appends the table WriteTable writes to b and returns the
// extended buffer.
func AppendTable(b []byte, s ipvs.Snapshot, opts TableOptions) []byte {
	t := tableWriter{b: b, exact: opts.Exact}
	if opts.Info != nil {
		t.str("IP Virtual Server version ")
		t.str(opts.Info.Version.String())
		t.str(" (size=")
		t.str(strconv.FormatInt(int64(int32(opts.Info.ConnTableSize)), 10))
		t.str(")\n")
	}
	t.heading(opts.Format)
	svcs := slices.Clone(s.Services)
	slices.SortStableFunc(svcs, func(a, b ipvs.ServiceSnapshot) int { return compareServicesList(a.Service, b.Service) })
	for _, ss := range svcs {
		t.service(opts.Format, ss.ServiceInfo)
		dests := slices.Clone(ss.Destinations)
		slices.SortStableFunc(dests, func(a, b ipvs.DestinationInfo) int { return compareDestinationsList(a.Destination, b.Destination) })
		for _, d := range dests {
			t.destination(opts.Format, d)
		}
	}
	return t.b
}

// tableWriter appends the lines of a table to b.
type tableWriter struct {
	b     []byte
	exact bool
}

func (t *tableWriter) str(s string) { t.b = append(t.b, s...) }

// left appends s padded with spaces to width (printf's %-Ns).
func (t *tableWriter) left(s string, width int) {
	t.str(s)
	for n := len(s); n < width; n++ {
		t.b = append(t.b, ' ')
	}
}

// right appends s after spaces up to width (printf's %Ns).
func (t *tableWriter) right(s string, width int) {
	for n := len(s); n < width; n++ {
		t.b = append(t.b, ' ')
	}
	t.str(s)
}

func (t *tableWriter) heading(f TableFormat) {
	const prot, remote = "Prot LocalAddress:Port", "  -> RemoteAddress:Port"
	// cols writes the column names after prot, each right-aligned in
	// widths[i] columns, or left-aligned in -widths[i] when it is negative.
	cols := func(widths []int, names ...string) {
		t.left(prot, 33)
		for i, n := range names {
			t.str(" ")
			if widths[i] > 0 {
				t.right(n, widths[i])
			} else {
				t.left(n, -widths[i])
			}
		}
		t.str("\n" + remote + "\n")
	}
	switch f {
	case TableStats:
		cols([]int{8, 8, 8, 8, 8}, "Conns", "InPkts", "OutPkts", "InBytes", "OutBytes")
	case TableRate:
		cols([]int{8, 8, 8, 8, 8}, "CPS", "InPPS", "OutPPS", "InBPS", "OutBPS")
	case TableThresholds:
		cols([]int{-10, -10, -10, -10}, "Uthreshold", "Lthreshold", "ActiveConn", "InActConn")
	case TablePersistentConn:
		cols([]int{-9, -11, -10, -10}, "Weight", "PersistConn", "ActiveConn", "InActConn")
	case TableTunnelInfo:
		t.str(prot + " Scheduler Flags\n" + remote + "           Forward TunnelInfo    Weight ActiveConn InActConn\n")
	default:
		t.str(prot + " Scheduler Flags\n" + remote + "           Forward Weight ActiveConn InActConn\n")
	}
}

// service appends a service's line.
func (t *tableWriter) service(f TableFormat, si ipvs.ServiceInfo) {
	name := serviceListName(si.Service)
	switch f {
	case TableStats:
		t.left(name, 33)
		t.counters(si.Stats)
	case TableRate:
		t.left(name, 33)
		t.rates(si.Stats, true)
	default:
		t.str(name)
		t.str(" ")
		t.str(serviceListFlags(si.Service))
	}
	t.str("\n")
}

// destination appends a destination's line.
func (t *tableWriter) destination(f TableFormat, d ipvs.DestinationInfo) {
	t.str("  -> ")
	t.left(textAddrPort(d.Addr, d.Port), 28)
	u := func(v uint32, width int) {
		t.str(" ")
		t.left(strconv.FormatUint(uint64(v), 10), width)
	}
	switch f {
	case TableStats:
		t.counters(d.Stats)
	case TableRate:
		t.rates(d.Stats, false)
	case TableThresholds:
		u(d.UpperThreshold, 10)
		u(d.LowerThreshold, 10)
		u(d.ActiveConns, 10)
		u(d.InactiveConns, 10)
	case TablePersistentConn:
		u(d.Weight, 9)
		u(d.PersistentConns, 11)
		u(d.ActiveConns, 10)
		u(d.InactiveConns, 10)
	default:
		t.str(" ")
		t.left(forwardListName(d.Forward), 7)
		if f == TableTunnelInfo {
			t.str(" ")
			t.left(tunnelListInfo(d.Destination), 13)
		}
		t.str(" ")
		t.left(strconv.FormatInt(int64(int32(d.Weight)), 10), 6)
		u(d.ActiveConns, 10)
		u(d.InactiveConns, 10)
	}
	t.str("\n")
}

// counters appends the five counters of --stats.
func (t *tableWriter) counters(s ipvs.Stats) {
	for _, v := range []uint64{s.Connections, s.PacketsIn, s.PacketsOut, s.BytesIn, s.BytesOut} {
		t.number(v)
	}
}

// rates appends the five rates of --rate. ipvsadm scales all five on a
// service's line, but only the byte rates on a destination's: its
// connection and packet rates are always printed in full there.
func (t *tableWriter) rates(s ipvs.Stats, service bool) {
	for i, v := range []uint64{s.CPS, s.PPSIn, s.PPSOut, s.BPSIn, s.BPSOut} {
		if !service && i < 3 {
			t.str(" ")
			t.right(strconv.FormatUint(v, 10), 8)
			continue
		}
		t.number(v)
	}
}

// number appends a counter or rate as ipvsadm does: right-aligned in nine
// columns (or one more than its digits, with --exact), and without
// --exact, from 10^8 on, in thousands, millions, billions or trillions,
// rounded down, each in eight columns and followed by its letter.
func (t *tableWriter) number(v uint64) {
	digits := strconv.FormatUint(v, 10)
	if t.exact || v < 1e8 {
		t.right(digits, max(len(digits), 8)+1)
		return
	}
	unit, div := "T", uint64(1e12)
	switch {
	case v < 1e9:
		unit, div = "K", 1e3
	case v < 1e11:
		unit, div = "M", 1e6
	case v < 1e14:
		unit, div = "G", 1e9
	}
	t.right(strconv.FormatUint(v/div, 10), 8)
	t.str(unit)
}

// serviceListName is a service as ipvsadm -Ln names it: "TCP  198.18.0.1:80",
// "SCTP [2001:db8::1]:80", "FWM  7", "FWM  7 IPv6".
func serviceListName(s ipvs.Service) string {
	k := s.Key()
	if k.FWMark != 0 {
		name := "FWM  " + strconv.FormatInt(int64(int32(k.FWMark)), 10)
		if k.Family == ipvs.IPv6 {
			name += " IPv6"
		}
		return name
	}
	prot := strings.ToUpper(k.Protocol.String())
	for len(prot) < 4 {
		prot += " "
	}
	return prot + " " + textAddrPort(k.Addr, k.Port)
}

// serviceListFlags is the rest of a service's line in ipvsadm -Ln: its
// scheduler, then scheduler flags in parentheses, "persistent T",
// "mask M" (a dotted mask for IPv4, a prefix length for IPv6; left out when
// it is the full length), "pe NAME" and "ops".
func serviceListFlags(s ipvs.Service) string {
	var b strings.Builder
	b.WriteString(s.Scheduler)
	if f := uint32(s.SchedFlags & allSchedFlags); f != 0 {
		b.WriteString(" (" + strings.Join(ipvs.SchedFlags(f).Names(s.Scheduler), ",") + ")")
	}
	if p := s.Persistence; p.Timeout > 0 {
		b.WriteString(" persistent ")
		b.WriteString(strconv.FormatUint(uint64(uint32(p.Timeout/time.Second)), 10))
		if s.Key().Family == ipvs.IPv6 {
			if p.PrefixLen != 0 && p.PrefixLen < 128 {
				b.WriteString(" mask " + strconv.Itoa(int(p.PrefixLen)))
			}
		} else if p.PrefixLen != 0 && p.PrefixLen < 32 {
			m := ^uint32(0) << (32 - p.PrefixLen)
			b.WriteString(" mask ")
			b.WriteString(strconv.Itoa(int(m>>24)) + "." + strconv.Itoa(int(m>>16&0xff)) + "." +
				strconv.Itoa(int(m>>8&0xff)) + "." + strconv.Itoa(int(m&0xff)))
		}
	}
	if s.PersistenceEngine != "" {
		b.WriteString(" pe " + s.PersistenceEngine)
	}
	if s.OnePacket {
		b.WriteString(" ops")
	}
	return b.String()
}

// forwardListName is a forwarding method as ipvsadm -Ln names it.
func forwardListName(m ipvs.ForwardMethod) string {
	switch m {
	case ipvs.Masq:
		return "Masq"
	case ipvs.LocalNode:
		return "Local"
	case ipvs.Tunnel:
		return "Tunnel"
	case ipvs.DirectRoute:
		return "Route"
	}
	return m.String()
}

// tunnelListInfo is a destination's tunnel as ipvsadm -Ln --tun-info shows
// it. A tunnel with both checksum flags (which ipvsadm cannot set) shows as
// "r+c".
func tunnelListInfo(d ipvs.Destination) string {
	if d.Forward != ipvs.Tunnel {
		return "n/a"
	}
	csum := "-c"
	switch {
	case d.TunnelFlags&ipvs.TunnelRemCsum != 0:
		csum = "r+c"
	case d.TunnelFlags&ipvs.TunnelCsum != 0:
		csum = "+c"
	}
	switch d.TunnelType {
	case ipvs.IPIP:
		return "ipip"
	case ipvs.GUE:
		return "gue:" + strconv.Itoa(int(d.TunnelPort)) + ":" + csum
	case ipvs.GRE:
		return "gre:" + csum
	}
	return d.TunnelType.String()
}
