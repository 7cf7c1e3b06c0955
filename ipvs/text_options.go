package ipvs

import (
	"math"
	"strconv"
)

// textOption is one option ipvsadm knows: its long name (used in errors and
// to detect repeats), whether it takes an argument, and how it sets a line.
type textOption struct {
	long  string
	arg   int // 0 none, 1 required, 2 optional (-p)
	apply func(l *textLine, v string) *TextError
}

var textOptions map[string]*textOption

func init() {
	cmd := func(c byte) func(*textLine, string) *TextError {
		return func(l *textLine, _ string) *TextError {
			if l.cmd != 0 {
				return textErr("", "", "more than one command")
			}
			l.cmd = c
			return nil
		}
	}
	svc := func(proto uint16, long string) func(*textLine, string) *TextError {
		return func(l *textLine, v string) *TextError {
			a, port, _, err := parseTextAddrPort(v)
			if err != nil {
				return textErr(long, v, "%v", err)
			}
			l.proto, l.addr, l.port = proto, a, port
			return nil
		}
	}
	fwd := func(c byte) func(*textLine, string) *TextError {
		return func(l *textLine, _ string) *TextError { l.fwd = c; return nil }
	}
	csum := func(c string) func(*textLine, string) *TextError {
		return func(l *textLine, _ string) *TextError {
			if l.tunCsum != "" {
				return textErr("tun-"+c, "", "conflicts with --tun-%s", l.tunCsum)
			}
			l.tunCsum = c
			return nil
		}
	}
	opts := []struct {
		names []string
		opt   textOption
	}{
		{[]string{"-A", "--add-service"}, textOption{"add-service", 0, cmd('A')}},
		{[]string{"-E", "--edit-service"}, textOption{"edit-service", 0, cmd('E')}},
		{[]string{"-D", "--delete-service"}, textOption{"delete-service", 0, cmd('D')}},
		{[]string{"-a", "--add-server"}, textOption{"add-server", 0, cmd('a')}},
		{[]string{"-e", "--edit-server"}, textOption{"edit-server", 0, cmd('e')}},
		{[]string{"-d", "--delete-server"}, textOption{"delete-server", 0, cmd('d')}},
		{[]string{"-t", "--tcp-service"}, textOption{"service-address", 1, svc(textProtoTCP, "tcp-service")}},
		{[]string{"-u", "--udp-service"}, textOption{"service-address", 1, svc(textProtoUDP, "udp-service")}},
		{[]string{"--sctp-service"}, textOption{"service-address", 1, svc(textProtoSCTP, "sctp-service")}},
		{[]string{"-f", "--fwmark-service"}, textOption{"service-address", 1, func(l *textLine, v string) *TextError {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil || n == 0 {
				return textErr("fwmark-service", v, "want an integer from 1 to %d", uint32(math.MaxUint32))
			}
			l.fwmark = uint32(n)
			return nil
		}}},
		{[]string{"-6", "--ipv6"}, textOption{"ipv6", 0, func(l *textLine, v string) *TextError {
			if l.fwmark == 0 {
				return textErr("ipv6", "", "-6 used before -f")
			}
			l.ipv6 = true
			return nil
		}}},
		{[]string{"-s", "--scheduler"}, textOption{"scheduler", 1, func(l *textLine, v string) *TextError {
			if v == "" || len(v) >= 16 { // IP_VS_SCHEDNAME_MAXLEN
				return textErr("scheduler", v, "want a scheduler name of 1 to 15 bytes")
			}
			l.sched = v
			return nil
		}}},
		{[]string{"-p", "--persistent"}, textOption{"persistent", 2, func(l *textLine, v string) *TextError {
			l.persistent, l.timeout = true, textDefaultPersistent
			if v != "" {
				n, err := strconv.ParseUint(v, 10, 32)
				if err != nil || n < 1 || n > textMaxTimeout {
					return textErr("persistent", v, "want a timeout from 1 to %d seconds", textMaxTimeout)
				}
				l.timeout = uint32(n)
			}
			return nil
		}}},
		{[]string{"-M", "--netmask"}, textOption{"netmask", 1, func(l *textLine, v string) *TextError {
			l.netmaskRaw = v // read once the family is known
			return nil
		}}},
		{[]string{"--pe"}, textOption{"pe", 1, func(l *textLine, v string) *TextError {
			if v == "" || len(v) >= 16 { // IP_VS_PENAME_MAXLEN
				return textErr("pe", v, "want a persistence engine name of 1 to 15 bytes")
			}
			l.pe = v
			return nil
		}}},
		{[]string{"-o", "--ops"}, textOption{"ops", 0, func(l *textLine, _ string) *TextError { l.ops = true; return nil }}},
		{[]string{"-b", "--sched-flags"}, textOption{"sched-flags", 1, func(l *textLine, v string) *TextError {
			l.flagsRaw = v // read once the scheduler is known
			return nil
		}}},
		{[]string{"-r", "--real-server"}, textOption{"real-server", 1, func(l *textLine, v string) *TextError {
			a, port, hasPort, err := parseTextAddrPort(v)
			if err != nil {
				return textErr("real-server", v, "%v", err)
			}
			l.daddr, l.dport, l.dportSet = a, port, hasPort
			return nil
		}}},
		{[]string{"-g", "--gatewaying"}, textOption{"forwarding-method", 0, fwd('g')}},
		{[]string{"-i", "--ipip"}, textOption{"forwarding-method", 0, fwd('i')}},
		{[]string{"-m", "--masquerading"}, textOption{"forwarding-method", 0, fwd('m')}},
		{[]string{"-w", "--weight"}, textOption{"weight", 1, func(l *textLine, v string) *TextError {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || n > math.MaxInt32 {
				return textErr("weight", v, "want an integer from 0 to %d", math.MaxInt32)
			}
			l.weight, l.hasWeight = n, true
			return nil
		}}},
		{[]string{"-x", "--u-threshold"}, textOption{"u-threshold", 1, func(l *textLine, v string) *TextError {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil || n > math.MaxInt32 {
				return textErr("u-threshold", v, "want an integer from 0 to %d", math.MaxInt32)
			}
			l.uthresh = uint32(n)
			return nil
		}}},
		{[]string{"-y", "--l-threshold"}, textOption{"l-threshold", 1, func(l *textLine, v string) *TextError {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil || n > math.MaxInt32 {
				return textErr("l-threshold", v, "want an integer from 0 to %d", math.MaxInt32)
			}
			l.lthresh = uint32(n)
			return nil
		}}},
		{[]string{"--tun-type"}, textOption{"tun-type", 1, func(l *textLine, v string) *TextError {
			switch v {
			case "ipip", "gue", "gre":
				l.tunType = v
				return nil
			}
			return textErr("tun-type", v, "want ipip, gue or gre")
		}}},
		{[]string{"--tun-port"}, textOption{"tun-port", 1, func(l *textLine, v string) *TextError {
			n, err := strconv.ParseUint(v, 10, 16)
			if err != nil || n == 0 {
				return textErr("tun-port", v, "want a port from 1 to 65535")
			}
			l.tunPort = uint16(n)
			return nil
		}}},
		{[]string{"--tun-nocsum"}, textOption{"tun-nocsum", 0, csum("nocsum")}},
		{[]string{"--tun-csum"}, textOption{"tun-csum", 0, csum("csum")}},
		{[]string{"--tun-remcsum"}, textOption{"tun-remcsum", 0, csum("remcsum")}},
	}
	textOptions = map[string]*textOption{}
	for _, o := range opts {
		o := o
		for _, n := range o.names {
			textOptions[n] = &o.opt
		}
	}
}
