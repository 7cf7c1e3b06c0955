package ipvsadm

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

// textOptions are the options by every name ipvsadm takes for them.
var textOptions = indexTextOptions()

func indexTextOptions() map[string]*textOption {
	opts := []struct {
		names []string
		opt   textOption
	}{
		{[]string{"-A", "--add-service"}, textOption{"add-service", 0, setCmd('A')}},
		{[]string{"-E", "--edit-service"}, textOption{"edit-service", 0, setCmd('E')}},
		{[]string{"-D", "--delete-service"}, textOption{"delete-service", 0, setCmd('D')}},
		{[]string{"-a", "--add-server"}, textOption{"add-server", 0, setCmd('a')}},
		{[]string{"-e", "--edit-server"}, textOption{"edit-server", 0, setCmd('e')}},
		{[]string{"-d", "--delete-server"}, textOption{"delete-server", 0, setCmd('d')}},
		{[]string{"-t", "--tcp-service"}, textOption{"service-address", 1, setService(textProtoTCP, "tcp-service")}},
		{[]string{"-u", "--udp-service"}, textOption{"service-address", 1, setService(textProtoUDP, "udp-service")}},
		{[]string{"--sctp-service"}, textOption{"service-address", 1, setService(textProtoSCTP, "sctp-service")}},
		{[]string{"-f", "--fwmark-service"}, textOption{"service-address", 1, (*textLine).setFWMark}},
		{[]string{"-6", "--ipv6"}, textOption{"ipv6", 0, (*textLine).setIPv6}},
		{[]string{"-s", "--scheduler"}, textOption{"scheduler", 1, (*textLine).setScheduler}},
		{[]string{"-p", "--persistent"}, textOption{"persistent", 2, (*textLine).setPersistent}},
		{[]string{"-M", "--netmask"}, textOption{"netmask", 1, func(l *textLine, v string) *TextError {
			l.netmaskRaw = v // read once the family is known
			return nil
		}}},
		{[]string{"--pe"}, textOption{"pe", 1, (*textLine).setPE}},
		{[]string{"-o", "--ops"}, textOption{"ops", 0, func(l *textLine, _ string) *TextError { l.ops = true; return nil }}},
		{[]string{"-b", "--sched-flags"}, textOption{"sched-flags", 1, func(l *textLine, v string) *TextError {
			l.flagsRaw = v // read once the scheduler is known
			return nil
		}}},
		{[]string{"-r", "--real-server"}, textOption{"real-server", 1, (*textLine).setRealServer}},
		{[]string{"-g", "--gatewaying"}, textOption{"forwarding-method", 0, setForward('g')}},
		{[]string{"-i", "--ipip"}, textOption{"forwarding-method", 0, setForward('i')}},
		{[]string{"-m", "--masquerading"}, textOption{"forwarding-method", 0, setForward('m')}},
		{[]string{"-w", "--weight"}, textOption{"weight", 1, (*textLine).setWeight}},
		{[]string{"-x", "--u-threshold"}, textOption{"u-threshold", 1, setThreshold("u-threshold", func(l *textLine) *uint32 { return &l.uthresh })}},
		{[]string{"-y", "--l-threshold"}, textOption{"l-threshold", 1, setThreshold("l-threshold", func(l *textLine) *uint32 { return &l.lthresh })}},
		{[]string{"--tun-type"}, textOption{"tun-type", 1, (*textLine).setTunType}},
		{[]string{"--tun-port"}, textOption{"tun-port", 1, (*textLine).setTunPort}},
		{[]string{"--tun-nocsum"}, textOption{"tun-nocsum", 0, setCsum("nocsum")}},
		{[]string{"--tun-csum"}, textOption{"tun-csum", 0, setCsum("csum")}},
		{[]string{"--tun-remcsum"}, textOption{"tun-remcsum", 0, setCsum("remcsum")}},
	}
	index := map[string]*textOption{}
	for _, o := range opts {
		for _, n := range o.names {
			index[n] = &o.opt
		}
	}
	return index
}

func setCmd(c byte) func(*textLine, string) *TextError {
	return func(l *textLine, _ string) *TextError {
		if l.cmd != 0 {
			return textErr("", "", "more than one command")
		}
		l.cmd = c
		return nil
	}
}

func setService(proto uint16, long string) func(*textLine, string) *TextError {
	return func(l *textLine, v string) *TextError {
		a, port, _, err := parseTextAddrPort(v)
		if err != nil {
			return textErr(long, v, "%v", err)
		}
		l.proto, l.addr, l.port = proto, a, port
		return nil
	}
}

func setForward(c byte) func(*textLine, string) *TextError {
	return func(l *textLine, _ string) *TextError { l.fwd = c; return nil }
}

func setCsum(c string) func(*textLine, string) *TextError {
	return func(l *textLine, _ string) *TextError {
		if l.tunCsum != "" {
			return textErr("tun-"+c, "", "conflicts with --tun-%s", l.tunCsum)
		}
		l.tunCsum = c
		return nil
	}
}

func setThreshold(long string, field func(*textLine) *uint32) func(*textLine, string) *TextError {
	return func(l *textLine, v string) *TextError {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n > math.MaxInt32 {
			return textErr(long, v, "want an integer from 0 to %d", math.MaxInt32)
		}
		*field(l) = uint32(n)
		return nil
	}
}

func (l *textLine) setFWMark(v string) *TextError {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n == 0 {
		return textErr("fwmark-service", v, "want an integer from 1 to %d", uint32(math.MaxUint32))
	}
	l.fwmark = uint32(n)
	return nil
}

func (l *textLine) setIPv6(string) *TextError {
	if l.fwmark == 0 {
		return textErr("ipv6", "", "-6 used before -f")
	}
	l.ipv6 = true
	return nil
}

func (l *textLine) setScheduler(v string) *TextError {
	if v == "" || len(v) >= 16 { // IP_VS_SCHEDNAME_MAXLEN
		return textErr("scheduler", v, "want a scheduler name of 1 to 15 bytes")
	}
	l.sched = v
	return nil
}

func (l *textLine) setPersistent(v string) *TextError {
	l.persistent, l.timeout = true, textDefaultPersistent
	if v != "" {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n < 1 || n > textMaxTimeout {
			return textErr("persistent", v, "want a timeout from 1 to %d seconds", textMaxTimeout)
		}
		l.timeout = uint32(n)
	}
	return nil
}

func (l *textLine) setPE(v string) *TextError {
	if v == "" || len(v) >= 16 { // IP_VS_PENAME_MAXLEN
		return textErr("pe", v, "want a persistence engine name of 1 to 15 bytes")
	}
	l.pe = v
	return nil
}

func (l *textLine) setRealServer(v string) *TextError {
	a, port, hasPort, err := parseTextAddrPort(v)
	if err != nil {
		return textErr("real-server", v, "%v", err)
	}
	l.daddr, l.dport, l.dportSet = a, port, hasPort
	return nil
}

func (l *textLine) setWeight(v string) *TextError {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return textErr("weight", v, "want an integer from 0 to %d", math.MaxInt32)
	}
	l.weight, l.hasWeight = n, true
	return nil
}

func (l *textLine) setTunType(v string) *TextError {
	switch v {
	case "ipip", "gue", "gre":
		l.tunType = v
		return nil
	}
	return textErr("tun-type", v, "want ipip, gue or gre")
}

func (l *textLine) setTunPort(v string) *TextError {
	n, err := strconv.ParseUint(v, 10, 16)
	if err != nil || n == 0 {
		return textErr("tun-port", v, "want a port from 1 to 65535")
	}
	l.tunPort = uint16(n)
	return nil
}
