package ipvsadm

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/ipvskit/ipvskit/ipvs"
)

// textAddrPort formats an address and port as ipvsadm -n does:
// "198.18.0.1:80", "[2001:db8::1]:80".
func textAddrPort(a netip.Addr, port uint16) string {
	if a.Is6() {
		return "[" + a.String() + "]:" + strconv.Itoa(int(port))
	}
	return a.String() + ":" + strconv.Itoa(int(port))
}

// textService is the service part of a line: "-t 198.18.0.1:80", "-f 1 -6".
func (l *textLine) textService() string {
	if l.fwmark != 0 {
		s := "-f " + strconv.FormatUint(uint64(l.fwmark), 10)
		if l.ipv6 {
			s += " -6"
		}
		return s
	}
	var opt string
	switch l.proto {
	case textProtoTCP:
		opt = "-t"
	case textProtoUDP:
		opt = "-u"
	case textProtoSCTP:
		opt = "--sctp-service"
	default:
		opt = "--xxx-service" // what ipvsadm prints for a protocol it does not know
	}
	return opt + " " + textAddrPort(l.addr, l.port)
}

// format renders the line exactly as ipvsadm -Sn prints it (for -A and -a),
// and in the same style for the other commands. ipvsadm -Sn never prints
// the thresholds; with thresholds true, -x and -y follow a destination's
// weight when either is not zero, so that the text keeps them.
func (l *textLine) format(thresholds bool) string {
	var b strings.Builder
	b.WriteByte('-')
	b.WriteByte(l.cmd)
	b.WriteByte(' ')
	b.WriteString(l.textService())
	switch l.cmd {
	case 'A', 'E':
		b.WriteString(" -s ")
		b.WriteString(l.sched)
		if l.persistent {
			b.WriteString(" -p ")
			b.WriteString(strconv.FormatUint(uint64(l.timeout), 10))
			v6 := l.ipv6 || (l.fwmark == 0 && l.addr.Is6())
			if v6 && l.netmask != 128 {
				b.WriteString(" -M ")
				b.WriteString(strconv.FormatUint(uint64(l.netmask), 10))
			} else if !v6 && l.netmask != 0xffffffff {
				m := l.netmask
				b.WriteString(" -M ")
				b.WriteString(netip.AddrFrom4([4]byte{byte(m >> 24), byte(m >> 16), byte(m >> 8), byte(m)}).String())
			}
		}
		if l.pe != "" {
			b.WriteString(" --pe ")
			b.WriteString(l.pe)
		}
		if l.ops {
			b.WriteString(" -o")
		}
		if l.schedFlags&(textSched1|textSched2|textSched3) != 0 {
			b.WriteString(" -b ")
			b.WriteString(strings.Join(ipvs.SchedFlags(l.schedFlags).Names(l.sched), ","))
		}
	case 'a', 'e', 'd':
		b.WriteString(" -r ")
		b.WriteString(textAddrPort(l.daddr, l.dport))
		if l.cmd == 'd' {
			break
		}
		b.WriteString(" -")
		b.WriteByte(l.fwd)
		b.WriteString(" -w ")
		b.WriteString(strconv.FormatInt(l.weight, 10))
		if l.fwd == 'i' {
			switch l.tunType {
			case "gue":
				b.WriteString(" --tun-type gue --tun-port ")
				b.WriteString(strconv.Itoa(int(l.tunPort)))
				b.WriteString(" --tun-" + textCsumOrDefault(l.tunCsum))
			case "gre":
				b.WriteString(" --tun-type gre --tun-" + textCsumOrDefault(l.tunCsum))
			default:
				b.WriteString(" --tun-type ipip")
			}
		}
		if thresholds && (l.uthresh != 0 || l.lthresh != 0) {
			b.WriteString(" -x ")
			b.WriteString(strconv.FormatUint(uint64(l.uthresh), 10))
			b.WriteString(" -y ")
			b.WriteString(strconv.FormatUint(uint64(l.lthresh), 10))
		}
	}
	return b.String()
}

func textCsumOrDefault(c string) string {
	if c == "" {
		return "nocsum"
	}
	return c
}
