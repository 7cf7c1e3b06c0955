package dummy

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/ipvskit/ipvskit/internal/nlattr"
)

// le32 is v in the machine's byte order, as netlink carries it.
func le32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// head is a struct ifinfomsg for index with flags and change.
func head(index int, flags, change uint32) []byte {
	b := []byte{0, 0, 0, 0}
	b = append(b, le32(uint32(index))...)
	b = append(b, le32(flags)...)
	return append(b, le32(change)...)
}

// attr is one netlink attribute, padded (nlattr's own tests hold its
// bytes).
func attr(typ uint16, v ...byte) []byte {
	e := nlattr.NewEncoder(nil)
	e.Attr(typ, v)
	return e.Bytes()
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// The link requests, byte for byte as rtnetlink reads them.
func TestLinkMessages(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want []byte
	}{
		{"get", getLinkMessage("vip0"), cat(head(0, 0, 0), attr(iflaIfname, 'v', 'i', 'p', '0', 0))},
		{"new", newLinkMessage("ipvskit-1", "me", nil), cat(head(0, 0, 0),
			attr(iflaIfname, []byte("ipvskit-1\x00")...), attr(iflaIfalias, 'm', 'e'), attr(iflaTxqlen, le32(0)...),
			attr(iflaLinkinfo|0x8000, attr(iflaInfoKind, 'd', 'u', 'm', 'm', 'y')...))},
		{"new, probe", newLinkMessage("p", "", []byte{1, 0, 0x5e, 0, 0, 1}), cat(head(0, 0, 0),
			attr(iflaIfname, 'p', 0), attr(iflaTxqlen, le32(0)...), attr(iflaAddress, 1, 0, 0x5e, 0, 0, 1),
			attr(iflaLinkinfo|0x8000, attr(iflaInfoKind, 'd', 'u', 'm', 'm', 'y')...))},
		{"alias", setLinkAttrMessage(7, iflaIfalias, "ipvskit:x"), cat(head(7, 0, 0), attr(iflaIfalias, []byte("ipvskit:x")...))},
		{"rename", setLinkAttrMessage(7, iflaIfname, "vip0"), cat(head(7, 0, 0), attr(iflaIfname, 'v', 'i', 'p', '0'))},
		{"noarp", setLinkFlagsMessage(7, iffNoARP), head(7, 0x80, 0x80)},
		{"up", setLinkFlagsMessage(7, iffUp), head(7, 1, 1)},
		{"delete", delLinkMessage(7), head(7, 0, 0)},
	} {
		if !bytes.Equal(tc.got, tc.want) {
			t.Errorf("%s:\n got % x\nwant % x", tc.name, tc.got, tc.want)
		}
	}
}

// parseLink reads what the kernel reports of a link, and refuses what is
// cut short.
func TestParseLink(t *testing.T) {
	full := cat(head(9, iffUp|iffNoARP, 0), attr(iflaIfname, []byte("kube-ipvs0\x00")...),
		attr(iflaIfalias, []byte("ipvskit:ipvskit\x00")...), attr(iflaTxqlen, le32(0)...),
		attr(iflaLinkinfo, attr(iflaInfoKind, []byte("dummy\x00")...)...))
	for _, tc := range []struct {
		name string
		b    []byte
		want link
		ok   bool
	}{
		{"dummy", full, link{index: 9, flags: iffUp | iffNoARP, name: "kube-ipvs0", alias: "ipvskit:ipvskit", kind: "dummy"}, true},
		{"no kind", cat(head(1, 0, 0), attr(iflaIfname, 'l', 'o', 0)), link{index: 1, name: "lo"}, true},
		{"request", newLinkMessage("a", "b", nil), link{name: "a", alias: "b", kind: "dummy"}, true},
		{"short head", full[:ifinfomsgLen-1], link{}, false},
		{"cut attribute", full[:len(full)-2], link{}, false},
		{"bad nest", cat(head(1, 0, 0), attr(iflaLinkinfo, 9, 0, 1, 0)), link{}, false},
	} {
		got, ok := parseLink(tc.b)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: parseLink = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if got := (link{}).typ(); got != "device" {
		t.Errorf("a link without a kind has type %q, want device", got)
	}
}

// The address requests, byte for byte, and parseAddr reads them back.
func TestAddrMessages(t *testing.T) {
	v4, v6 := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("2001:db8::1")
	ifa := func(fam, bits, flags byte, index uint32) []byte { return cat([]byte{fam, bits, flags, 0}, le32(index)) }
	for _, tc := range []struct {
		p    netip.Prefix
		want []byte
	}{
		{netip.PrefixFrom(v4, 32), cat(ifa(2, 32, 0, 7), attr(ifaLocal, v4.AsSlice()...), attr(ifaAddress, v4.AsSlice()...))},
		{netip.PrefixFrom(v4, 24), cat(ifa(2, 24, 0, 7), attr(ifaLocal, v4.AsSlice()...), attr(ifaAddress, v4.AsSlice()...))},
		{netip.PrefixFrom(v6, 128), cat(ifa(10, 128, ifaFNoDAD, 7), attr(ifaLocal, v6.AsSlice()...), attr(ifaAddress, v6.AsSlice()...))},
	} {
		got := addrMessage(7, tc.p)
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%v:\n got % x\nwant % x", tc.p, got, tc.want)
		}
		if i, p, ok := parseAddr(got); i != 7 || p != tc.p || !ok {
			t.Errorf("%v: parseAddr = %d, %v, %v", tc.p, i, p, ok)
		}
	}
	if b := addrDumpRequest(); !bytes.Equal(b, make([]byte, 8)) {
		t.Errorf("dump request % x", b)
	}
}

// parseAddr takes the local address over the peer's, and refuses other
// families, mismatched lengths and what is cut short.
func TestParseAddr(t *testing.T) {
	local, peer := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	ifa := func(fam, bits byte) []byte { return cat([]byte{fam, bits, 0, 0}, le32(3)) }
	good := cat(ifa(2, 24), attr(ifaAddress, peer.AsSlice()...), attr(ifaLocal, local.AsSlice()...))
	for _, tc := range []struct {
		name  string
		b     []byte
		index int
		want  netip.Prefix
		ok    bool
	}{
		{"peer", good, 3, netip.PrefixFrom(local, 24), true},
		{"IPv6, address only", cat(ifa(10, 64), attr(ifaAddress, netip.MustParseAddr("fe80::1").AsSlice()...)), 3, netip.MustParsePrefix("fe80::1/64"), true},
		{"other family", cat(ifa(17, 0), attr(ifaAddress, 1, 2)), 3, netip.Prefix{}, false},
		{"no address", ifa(2, 32), 3, netip.Prefix{}, false},
		{"IPv6 bytes in IPv4", cat(ifa(2, 32), attr(ifaLocal, netip.IPv6Loopback().AsSlice()...)), 3, netip.Prefix{}, false},
		{"prefix too long", cat(ifa(2, 33), attr(ifaLocal, local.AsSlice()...)), 3, netip.Prefix{}, false},
		{"cut", good[:len(good)-1], 3, netip.Prefix{}, false},
		{"short head", good[:7], 0, netip.Prefix{}, false},
	} {
		i, p, ok := parseAddr(tc.b)
		if i != tc.index || p != tc.want || ok != tc.ok {
			t.Errorf("%s: parseAddr = %d, %v, %v; want %d, %v, %v", tc.name, i, p, ok, tc.index, tc.want, tc.ok)
		}
	}
}

// Malformed link messages are refused, never a panic.
func FuzzParseLink(f *testing.F) {
	f.Add(newLinkMessage("kube-ipvs0", DefaultOwner, []byte{1, 0, 0x5e, 0, 0, 1}))
	f.Add(getLinkMessage("lo"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if l, ok := parseLink(b); !ok && l != (link{}) {
			t.Fatalf("refused, yet returned %+v", l)
		}
	})
}

// Malformed address messages are refused, never a panic; what is accepted
// is a valid prefix.
func FuzzParseAddr(f *testing.F) {
	f.Add(addrMessage(1, netip.MustParsePrefix("198.18.0.1/32")))
	f.Add(addrMessage(1, netip.MustParsePrefix("2001:db8::1/128")))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, p, ok := parseAddr(b); ok && (!p.IsValid() || p.Bits() > p.Addr().BitLen()) {
			t.Fatalf("accepted an impossible prefix %v", p)
		}
	})
}
