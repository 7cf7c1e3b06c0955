package conntrack

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/mdlayher/netlink"
)

// encodeEntry builds a dump message for fl the way the kernel does
// (ctnetlink_fill_info), with mdlayher/netlink's encoder rather than ours:
// nested tuples, a status, a timeout and counters around them, and the id
// and zone if given.
func encodeEntry(t testing.TB, fl Flow, id uint32, zone uint16) []byte {
	t.Helper()
	tuple := func(ae *netlink.AttributeEncoder, tp Tuple) {
		ae.Nested(ctaTupleIP, func(ae *netlink.AttributeEncoder) error {
			if tp.Src.Addr().Is4() {
				ae.Bytes(ctaIPv4Src, tp.Src.Addr().AsSlice())
				ae.Bytes(ctaIPv4Dst, tp.Dst.Addr().AsSlice())
			} else {
				ae.Bytes(ctaIPv6Src, tp.Src.Addr().AsSlice())
				ae.Bytes(ctaIPv6Dst, tp.Dst.Addr().AsSlice())
			}
			return nil
		})
		ae.Nested(ctaTupleProto, func(ae *netlink.AttributeEncoder) error {
			ae.Uint8(ctaProtoNum, uint8(fl.Protocol))
			ae.ByteOrder = binary.BigEndian
			ae.Uint16(ctaProtoSrcPort, tp.Src.Port())
			ae.Uint16(ctaProtoDstPort, tp.Dst.Port())
			return nil
		})
	}
	ae := netlink.NewAttributeEncoder()
	ae.Nested(ctaTupleOrig, func(ae *netlink.AttributeEncoder) error { tuple(ae, fl.Original); return nil })
	ae.Nested(ctaTupleReply, func(ae *netlink.AttributeEncoder) error { tuple(ae, fl.Reply); return nil })
	ae.ByteOrder = binary.BigEndian
	ae.Uint32(3, 0x188)                                                                                       // CTA_STATUS
	ae.Uint32(7, 117)                                                                                         // CTA_TIMEOUT
	ae.Nested(9, func(ae *netlink.AttributeEncoder) error { ae.Uint64(1, 3); ae.Uint64(2, 300); return nil }) // CTA_COUNTERS_ORIG
	if zone != 0 {
		ae.Uint16(ctaZone, zone)
	}
	if id != 0 {
		ae.Uint32(ctaID, id)
	}
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	fam := IPv4
	if fl.Original.Dst.Addr().Is6() {
		fam = IPv6
	}
	return append([]byte{byte(fam), nfnetlinkV0, 0, 0}, b...)
}

func TestDecodeEntry(t *testing.T) {
	for _, fl := range []Flow{
		flow(UDP, "198.18.20.2:40000", "198.18.100.1:53", "198.18.11.2:5353"),
		flow(SCTP, "[2001:db8:20::2]:40000", "[2001:db8:100::1]:53", "[2001:db8:11::2]:5353"),
		flow(TCP, "198.18.20.2:1", "198.18.100.1:65535", "198.18.11.2:0"),
	} {
		for _, zone := range []uint16{0, 7} {
			data := encodeEntry(t, fl, 0xdeadbeef, zone)
			e, err := decodeEntry(data)
			if err != nil {
				t.Fatalf("%v: %v", fl, err)
			}
			if e.flow != fl || e.family != fl.Family() {
				t.Errorf("decoded %v (%v), want %v", e.flow, e.family, fl)
			}
			if binary.BigEndian.Uint32(e.id[4:]) != 0xdeadbeef {
				t.Errorf("id attribute %x", e.id)
			}
			if (zone != 0) != (e.zone != nil) {
				t.Errorf("zone %d: zone attribute %x", zone, e.zone)
			}
			// The delete request is the family and exactly the original
			// tuple, zone and id attributes of the dump.
			m := deleteRequest(&e)
			if m.Header.Type != netlink.HeaderType(1<<8|2) {
				t.Errorf("delete request type %#x, want IPCTNL_MSG_CT_DELETE of subsystem 1", m.Header.Type)
			}
			want := append([]byte{byte(fl.Family()), 0, 0, 0}, e.orig...)
			if zone != 0 {
				want = append(want, e.zone...)
				want = append(want, 0, 0) // padding
			}
			want = append(want, e.id...)
			if !bytes.Equal(m.Data, want) {
				t.Errorf("delete request\n%x\nwant\n%x", m.Data, want)
			}
			got, err := decodeEntryTuplesOnly(m.Data)
			if err != nil || got != fl.Original {
				t.Errorf("delete request's tuple %v (%v), want %v", got, err, fl.Original)
			}
		}
	}
}

// decodeEntryTuplesOnly reads the original tuple back out of a request.
func decodeEntryTuplesOnly(data []byte) (Tuple, error) {
	var tp Tuple
	err := forAttrs(data[nfgenLen:], func(typ uint16, v, _ []byte) error {
		if typ == ctaTupleOrig {
			var err error
			tp, _, err = decodeTuple(v)
			return err
		}
		return nil
	})
	return tp, err
}

func TestDecodeEntryMalformed(t *testing.T) {
	good := encodeEntry(t, flow(UDP, "198.18.20.2:40000", "198.18.100.1:53", "198.18.11.2:5353"), 1, 0)
	v6 := encodeEntry(t, flow(UDP, "[2001:db8::2]:40000", "[2001:db8::1]:53", "[2001:db8::3]:5353"), 1, 0)
	noReply := append([]byte(nil), good[:4]...)
	_ = forAttrs(good[4:], func(typ uint16, _, raw []byte) error {
		if typ != ctaTupleReply {
			noReply = append(noReply, raw...)
			for len(noReply)%4 != 0 {
				noReply = append(noReply, 0)
			}
		}
		return nil
	})
	wrongFamily := append([]byte{byte(IPv6)}, good[1:]...)
	for name, data := range map[string][]byte{
		"empty":            nil,
		"nfgenmsg only":    good[:4],
		"truncated":        good[:len(good)-3],
		"attribute header": append(append([]byte(nil), good...), 1, 0),
		"zero length":      append(append([]byte(nil), good[:4]...), 0, 0, 1, 0),
		"no reply tuple":   noReply,
		"family mismatch":  wrongFamily,
		"v6 in v4 message": append([]byte{byte(IPv4)}, v6[1:]...),
	} {
		if _, err := decodeEntry(data); !errors.Is(err, errMalformed) {
			t.Errorf("%s: err = %v, want errMalformed", name, err)
		}
	}
	if _, err := decodeEntry(good); err != nil {
		t.Fatalf("the good message: %v", err)
	}
}

func TestDumpRequest(t *testing.T) {
	m := dumpRequest(IPv6)
	if m.Header.Type != netlink.HeaderType(1<<8|1) || m.Header.Flags&netlink.Dump != netlink.Dump || !bytes.Equal(m.Data, []byte{10, 0, 0, 0}) {
		t.Errorf("dump request %+v", m)
	}
}
