package ipvsadm

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/ipvs"
)

// This file is the line layer of the ipvsadm text format: one ipvsadm
// command line as a flat value (textLine), parsed from the options ipvsadm
// accepts and formatted exactly as `ipvsadm -Sn` prints it. text.go maps
// lines to and from the package's types.

// Protocol numbers and flags as ipvsadm and the kernel use them
// (include/uapi/linux/in.h, include/uapi/linux/ip_vs.h).
const (
	textProtoTCP  = 6
	textProtoUDP  = 17
	textProtoSCTP = 132

	textDefaultScheduler  = "wlc"      // ipvsadm's DEF_SCHED
	textDefaultPersistent = 300        // IPVS_SVC_PERSISTENT_TIMEOUT
	textMaxTimeout        = 86400 * 31 // ipvsadm's MAX_TIMEOUT
)

// Scheduler flag bits (IP_VS_SVC_F_SCHED1..3; sh and mh name the first two).
const (
	textSched1 = 0x0008
	textSched2 = 0x0010
	textSched3 = 0x0020
)

// textLine is one ipvsadm command line. Zero fields mean "not given".
type textLine struct {
	cmd byte // 'A', 'E', 'D' (services), 'a', 'e', 'd' (destinations)

	// The virtual service: protocol + address + port, or fwmark.
	proto  uint16 // textProtoTCP, textProtoUDP, textProtoSCTP; 0 with fwmark
	addr   netip.Addr
	port   uint16
	fwmark uint32
	ipv6   bool // -6: the fwmark service is IPv6

	// Service options (-A, -E).
	sched      string
	persistent bool
	timeout    uint32 // seconds, with persistent
	netmask    uint32 // IPv4 mask as a number (255.255.255.0 = 0xffffff00), or IPv6 prefix length
	netmaskRaw string // as given to -M; read once the family is known
	pe         string
	ops        bool
	schedFlags uint32 // textSched* bits
	flagsRaw   string // as given to -b; read once the scheduler is known

	// The destination (-a, -e, -d).
	daddr     netip.Addr
	dport     uint16
	dportSet  bool // -r had a port
	fwd       byte // 'g' (route), 'i' (tunnel), 'm' (masq); 0 = not given
	weight    int64
	hasWeight bool
	uthresh   uint32
	lthresh   uint32
	tunType   string // "ipip", "gue", "gre"; "" = not given
	tunPort   uint16
	tunCsum   string // "nocsum", "csum", "remcsum"; "" = not given
}

// TextError is an error in ipvsadm text: the line it is on (counting from
// 1), the option (field) at fault by ipvsadm's long name, and the value given.
type TextError struct {
	Line  int
	Field string
	Value string
	Err   error
}

func (e *TextError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ipvs text: line %d", e.Line)
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	if e.Value != "" {
		fmt.Fprintf(&b, " %q", e.Value)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *TextError) Unwrap() error { return e.Err }

// ErrText is wrapped by every *TextError, so callers can tell a bad input
// text apart from other failures with errors.Is.
var ErrText = errors.New("invalid ipvsadm text")

func textErr(field, value, format string, args ...any) *TextError {
	return &TextError{Field: field, Value: value, Err: fmt.Errorf("%w: "+format, append([]any{ErrText}, args...)...)}
}

// parseTextLine reads the fields of one ipvsadm command line (without a
// leading "ipvsadm") and checks them the way ipvsadm does before it sends
// anything: one command, the options that command allows, each at most once,
// and the same defaults (scheduler wlc, persistence 300 s, weight 1, route).
func parseTextLine(fields []string) (*textLine, *TextError) {
	l := &textLine{}
	seen := map[string]bool{}
	for i := 0; i < len(fields); i++ {
		name, val, hasVal := fields[i], "", false
		if strings.HasPrefix(name, "--") {
			name, val, hasVal = strings.Cut(name, "=")
		}
		o := textOptions[name]
		if o == nil {
			return nil, textErr("", fields[i], "unknown option")
		}
		if o.long != "add-service" && o.long != "edit-service" && o.long != "delete-service" &&
			o.long != "add-server" && o.long != "edit-server" && o.long != "delete-server" {
			if seen[o.long] {
				return nil, textErr(o.long, "", "given more than once")
			}
			seen[o.long] = true
		}
		switch {
		case o.arg == 0 && hasVal:
			return nil, textErr(o.long, val, "takes no value")
		case o.arg == 1 && !hasVal:
			if i+1 >= len(fields) {
				return nil, textErr(o.long, "", "needs a value")
			}
			i++
			val = fields[i]
		case o.arg == 2 && !hasVal:
			if i+1 < len(fields) && !strings.HasPrefix(fields[i+1], "-") {
				i++
				val = fields[i]
			}
		}
		if err := o.apply(l, val); err != nil {
			return nil, err
		}
	}
	if err := l.finish(seen); err != nil {
		return nil, err
	}
	return l, nil
}

// textAllowed lists, per command, the options it takes besides the
// command itself (ipvsadm's commands_v_options table); "service-address"
// is compulsory for all of them and "real-server" for the destination ones.
var textAllowed = map[byte][]string{
	'A': {"service-address", "ipv6", "scheduler", "persistent", "netmask", "pe", "ops", "sched-flags"},
	'E': {"service-address", "ipv6", "scheduler", "persistent", "netmask", "pe", "ops", "sched-flags"},
	'D': {"service-address", "ipv6"},
	'a': {"service-address", "ipv6", "real-server", "forwarding-method", "weight", "u-threshold", "l-threshold",
		"tun-type", "tun-port", "tun-nocsum", "tun-csum", "tun-remcsum"},
	'e': {"service-address", "ipv6", "real-server", "forwarding-method", "weight", "u-threshold", "l-threshold",
		"tun-type", "tun-port", "tun-nocsum", "tun-csum", "tun-remcsum"},
	'd': {"service-address", "ipv6", "real-server"},
}

// finish checks the line as a whole once every option is read, as ipvsadm
// does before it sends anything, and fills in ipvsadm's defaults.
func (l *textLine) finish(seen map[string]bool) *TextError {
	if err := l.checkOptions(seen); err != nil {
		return err
	}
	v6 := l.ipv6 || (l.fwmark == 0 && l.addr.Is6())
	switch l.cmd {
	case 'A', 'E':
		return l.finishService(seen, v6)
	case 'a', 'e', 'd':
		return l.finishServer(seen, v6)
	}
	return nil
}

// isServer reports whether the line's command is about a destination.
func (l *textLine) isServer() bool { return l.cmd == 'a' || l.cmd == 'e' || l.cmd == 'd' }

// checkOptions checks that the line has a command, only the options that
// command allows, and the ones it needs.
func (l *textLine) checkOptions(seen map[string]bool) *TextError {
	allowed, ok := textAllowed[l.cmd]
	if !ok {
		return textErr("", "", "no command (want -A, -E, -D, -a, -e or -d)")
	}
	// In name order, so that a line with several options the command does
	// not allow always gets the same error.
	for _, opt := range slices.Sorted(maps.Keys(seen)) {
		if !slices.Contains(allowed, opt) {
			return textErr(opt, "", "not allowed with the %s command", textCmdName(l.cmd))
		}
	}
	if !seen["service-address"] {
		return textErr("service-address", "", "the %s command needs -t, -u, --sctp-service or -f", textCmdName(l.cmd))
	}
	if l.isServer() && !seen["real-server"] {
		return textErr("real-server", "", "the %s command needs -r", textCmdName(l.cmd))
	}
	return nil
}

// finishService checks and completes the options of -A and -E.
func (l *textLine) finishService(seen map[string]bool, v6 bool) *TextError {
	if l.sched == "" {
		l.sched = textDefaultScheduler
	}
	if l.fwmark == 0 && l.port == 0 && !l.persistent {
		return textErr("service-address", textAddrPort(l.addr, l.port), "zero port for a non-persistent service")
	}
	if l.ops && l.fwmark == 0 && l.proto != textProtoUDP {
		return textErr("ops", "", "one-packet scheduling is only for UDP and fwmark services")
	}
	if err := l.finishNetmask(seen, v6); err != nil {
		return err
	}
	if seen["sched-flags"] {
		return l.readSchedFlags()
	}
	return nil
}

// finishNetmask reads -M now that the family is known, or sets the
// default: a host mask.
func (l *textLine) finishNetmask(seen map[string]bool, v6 bool) *TextError {
	switch {
	case seen["netmask"]:
		return l.readNetmask(v6)
	case v6:
		l.netmask = 128
	default:
		l.netmask = 0xffffffff
	}
	return nil
}

// finishServer checks and completes the options of -a, -e and -d.
func (l *textLine) finishServer(seen map[string]bool, v6 bool) *TextError {
	if !l.dportSet {
		l.dport = l.port
	}
	if l.cmd == 'd' {
		return nil
	}
	if l.fwd == 0 {
		l.fwd = 'g'
	}
	if !l.hasWeight {
		l.weight = 1
	}
	// For route and tunnel the real server's port is the service's.
	if l.fwmark == 0 && (l.fwd == 'g' || l.fwd == 'i') {
		l.dport = l.port
	}
	if l.daddr.Is6() != v6 && l.fwd != 'i' {
		return textErr("real-server", textAddrPort(l.daddr, l.dport), "a different address family is allowed only for tunnelling (-i)")
	}
	return l.finishTunnel(seen)
}

// finishTunnel checks the tunnel options of a destination against its
// forwarding method and tunnel type, which defaults to ipip for -i.
func (l *textLine) finishTunnel(seen map[string]bool) *TextError {
	tunOpt := seen["tun-type"] || seen["tun-port"] || l.tunCsum != ""
	if tunOpt && l.fwd != 'i' {
		return textErr("forwarding-method", "", "tunnel options need -i")
	}
	if l.fwd == 'i' && l.tunType == "" {
		l.tunType = "ipip"
	}
	switch l.tunType {
	case "ipip":
		if seen["tun-port"] || l.tunCsum != "" {
			return textErr("tun-type", "ipip", "takes no --tun-port or checksum option")
		}
	case "gue":
		if !seen["tun-port"] {
			return textErr("tun-port", "", "the gue tunnel type needs --tun-port")
		}
	case "gre":
		if seen["tun-port"] || l.tunCsum == "remcsum" {
			return textErr("tun-type", "gre", "takes no --tun-port or --tun-remcsum")
		}
	}
	return nil
}

func (l *textLine) readNetmask(v6 bool) *TextError {
	v := l.netmaskRaw
	if v6 {
		n, err := strconv.ParseUint(v, 10, 8)
		if err != nil || n < 1 || n > 128 {
			return textErr("netmask", v, "want an IPv6 prefix length from 1 to 128")
		}
		l.netmask = uint32(n)
		return nil
	}
	a, err := netip.ParseAddr(v)
	if err != nil || !a.Is4() {
		return textErr("netmask", v, "want an IPv4 netmask such as 255.255.255.0")
	}
	b := a.As4()
	l.netmask = uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	return nil
}

func (l *textLine) readSchedFlags() *TextError {
	for _, f := range strings.Split(l.flagsRaw, ",") {
		bit, err := ipvs.ParseSchedFlags(l.sched, f)
		switch {
		case err == nil:
			l.schedFlags |= uint32(bit)
		case slices.Contains(ipvs.SchedFlagNames("sh"), f) || slices.Contains(ipvs.SchedFlagNames("mh"), f):
			return textErr("sched-flags", f, "not a flag of the %s scheduler", l.sched)
		default:
			return textErr("sched-flags", f, "unknown scheduler flag")
		}
	}
	return nil
}

// parseTextAddrPort reads host[:port] the way ipvsadm does, numerically
// only: an IPv4 address with an optional ":port", an IPv6 address in
// brackets with a port ("[2001:db8::1]:80"), or a bare IPv6 address.
func parseTextAddrPort(s string) (a netip.Addr, port uint16, hasPort bool, err error) {
	host, ps := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 || !strings.HasPrefix(s[end+1:], ":") {
			return a, 0, false, errors.New("want [IPv6 address]:port")
		}
		host, ps, hasPort = s[1:end], s[end+2:], true
	} else if a6, err := netip.ParseAddr(s); err == nil && a6.Is6() {
		return a6, 0, false, nil
	} else if i := strings.LastIndexByte(s, ':'); i >= 0 {
		host, ps, hasPort = s[:i], s[i+1:], true
	}
	a, err = netip.ParseAddr(host)
	if err != nil || a.Zone() != "" {
		return a, 0, false, errors.New("want a numeric IP address (host names are not resolved)")
	}
	if strings.HasPrefix(s, "[") != a.Is6() {
		return a, 0, false, errors.New("an IPv6 address needs brackets before a port, an IPv4 address none")
	}
	if hasPort {
		n, perr := strconv.ParseUint(ps, 10, 16)
		if perr != nil {
			return a, 0, false, errors.New("want a numeric port from 0 to 65535 (service names are not resolved)")
		}
		port = uint16(n)
	}
	return a, port, hasPort, nil
}

func textCmdName(c byte) string {
	switch c {
	case 'A':
		return "add-service"
	case 'E':
		return "edit-service"
	case 'D':
		return "delete-service"
	case 'a':
		return "add-server"
	case 'e':
		return "edit-server"
	case 'd':
		return "delete-server"
	}
	return "?"
}

// parseTextLines reads ipvsadm -R input: one command a line, an optional
// leading "ipvsadm", blank lines and lines starting with '#' skipped. The
// returned lines carry their numbers; a *TextError names the line it is on.
func parseTextLines(text string) ([]*textLine, []int, error) {
	var (
		lines []*textLine
		nums  []int
	)
	for i, raw := range strings.Split(text, "\n") {
		fields := strings.Fields(raw)
		if len(fields) > 0 && fields[0] == "ipvsadm" {
			fields = fields[1:]
		}
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		l, err := parseTextLine(fields)
		if err != nil {
			err.Line = i + 1
			return nil, nil, err
		}
		lines = append(lines, l)
		nums = append(nums, i+1)
	}
	return lines, nums, nil
}

// Fields returns the refused value, its path being "line N" or "line N:
// option": a TextError is an inet.InputError.
func (e *TextError) Fields() []inet.FieldError {
	path := "line " + strconv.Itoa(e.Line)
	if e.Field != "" {
		path += ": " + e.Field
	}
	return []inet.FieldError{{Path: path, Value: e.Value, Reason: e.Err.Error()}}
}
