package inet

import (
	"net/netip"
	"testing"
)

// The values are the kernel's: the ipvs, ipset and conntrack wire encodings
// write them as they are.
func TestKernelNumbers(t *testing.T) {
	for _, c := range []struct {
		got, want int
		name      string
	}{
		{int(IPv4), 2, "AF_INET"}, {int(IPv6), 10, "AF_INET6"},
		{int(TCP), 6, "IPPROTO_TCP"}, {int(UDP), 17, "IPPROTO_UDP"}, {int(SCTP), 132, "IPPROTO_SCTP"},
		{int(ICMP), 1, "IPPROTO_ICMP"}, {int(ICMPv6), 58, "IPPROTO_ICMPV6"}, {int(UDPLite), 136, "IPPROTO_UDPLITE"},
	} {
		if c.got != c.want {
			t.Errorf("%s is %d, want %d", c.name, c.got, c.want)
		}
	}
}

func TestFamily(t *testing.T) {
	for _, c := range []struct {
		addr  netip.Addr
		want  Family
		str   string
		bits  int
		valid bool
	}{
		{netip.MustParseAddr("198.18.0.1"), IPv4, "IPv4", 32, true},
		{netip.MustParseAddr("2001:db8::1"), IPv6, "IPv6", 128, true},
		{netip.MustParseAddr("::ffff:198.18.0.1"), IPv6, "IPv6", 128, true},
		{netip.Addr{}, 0, "Family(0)", 0, false},
	} {
		f := FamilyOf(c.addr)
		if f != c.want || f.String() != c.str || f.Bits() != c.bits || f.IsValid() != c.valid {
			t.Errorf("FamilyOf(%v) = %v (%d bits, valid %v), want %v (%d bits, valid %v)",
				c.addr, f, f.Bits(), f.IsValid(), c.str, c.bits, c.valid)
		}
	}
	if s := Family(5).String(); s != "Family(5)" {
		t.Errorf("Family(5) prints %q", s)
	}
}

func TestProtocolNames(t *testing.T) {
	for p, name := range map[Protocol]string{TCP: "tcp", UDP: "udp", SCTP: "sctp", ICMP: "icmp", ICMPv6: "icmpv6", UDPLite: "udplite"} {
		if p.String() != name {
			t.Errorf("%d prints %q, want %q", uint8(p), p.String(), name)
		}
		if got, err := ParseProtocol(name); err != nil || got != p {
			t.Errorf("ParseProtocol(%q) = %v, %v; want %v", name, got, err, p)
		}
	}
	if got, err := ParseProtocol("TCP"); err != nil || got != TCP {
		t.Errorf(`ParseProtocol("TCP") = %v, %v; want tcp`, got, err)
	}
	for _, bad := range []string{"", " tcp", "gre", "Protocol(47)"} {
		if got, err := ParseProtocol(bad); err == nil {
			t.Errorf("ParseProtocol(%q) = %v, want an error", bad, got)
		}
	}
	if s := Protocol(47).String(); s != "Protocol(47)" {
		t.Errorf("Protocol(47) prints %q", s)
	}
}
