package ipset

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"testing"
	"time"

	"github.com/mdlayher/netlink"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/internal/nlattr"
)

func le16(v uint16) []byte { return binary.NativeEndian.AppendUint16(nil, v) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// attr builds one attribute by hand, independently of attrWriter.
func attr(typ uint16, payload ...byte) []byte {
	b := cat(le16(uint16(4+len(payload))), le16(typ), payload)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func TestCreateRequestBytes(t *testing.T) {
	s := Set{Name: "a", Type: HashIP, MaxElem: 10, Timeout: 300 * time.Second, Comment: true}
	m := createRequest(7, &s, 6, false)
	if want := netlink.HeaderType(0x0602); m.Header.Type != want {
		t.Errorf("type = %#x, want %#x (NFNL_SUBSYS_IPSET<<8 | IPSET_CMD_CREATE)", m.Header.Type, want)
	}
	if m.Header.Flags != 0x200 {
		t.Errorf("flags = %#x, want NLM_F_EXCL", m.Header.Flags)
	}
	data := cat(
		attr(0x4013, 0, 0, 0, 10),      // MAXELEM, net byte order flag, be32
		attr(0x4006, 0, 0, 0x01, 0x2c), // TIMEOUT 300
		attr(0x4008, 0, 0, 0, 0x10),    // CADT_FLAGS WITH_COMMENT
	)
	want := cat(
		[]byte{2, 0, 0, 0}, // nfgenmsg
		attr(1, 7),         // PROTOCOL
		attr(2, 'a', 0),    // SETNAME
		attr(3, []byte("hash:ip\x00")...),
		attr(4, 6), // REVISION
		attr(5, 2), // FAMILY inet
		attr(0x8007, data...),
	)
	if !bytes.Equal(m.Data, want) {
		t.Errorf("create request:\n got %s\nwant %s", hex.EncodeToString(m.Data), hex.EncodeToString(want))
	}

	if m := createRequest(7, &s, 6, true); m.Header.Flags != 0 {
		t.Errorf("create -exist: flags = %#x, want 0", m.Header.Flags)
	}
	bm := Set{Name: "p", Type: BitmapPort, PortFrom: 30000, PortTo: 32767}
	m = createRequest(6, &bm, 3, false)
	wantBM := cat([]byte{2, 0, 0, 0}, attr(1, 6), attr(2, 'p', 0), attr(3, []byte("bitmap:port\x00")...),
		attr(4, 3), attr(5, 0),
		attr(0x8007, cat(attr(0x4004, 0x75, 0x30), attr(0x4005, 0x7f, 0xff))...))
	if !bytes.Equal(m.Data, wantBM) {
		t.Errorf("bitmap create:\n got %s\nwant %s", hex.EncodeToString(m.Data), hex.EncodeToString(wantBM))
	}
}

func TestADTRequestBytes(t *testing.T) {
	entries := []Entry{
		{IP: netip.MustParseAddr("198.18.0.1"), Proto: TCP, Port: 80},
		{IP: netip.MustParseAddr("2001:db8::1"), Proto: UDP, Port: 53, Comment: "x", Timeout: time.Second},
	}
	m := adtRequest(7, cmdAdd, "s", entries, 5, false)
	if m.Header.Type != 0x0609 || m.Header.Flags != 0 {
		t.Errorf("header = %#x/%#x, want 0x609/0", m.Header.Type, m.Header.Flags)
	}
	v6 := netip.MustParseAddr("2001:db8::1").As16()
	e1 := cat(
		attr(0x8001, attr(0x4001, 198, 18, 0, 1)...), // IP { IPADDR_IPV4 }
		attr(0x4004, 0, 80),                          // PORT
		attr(7, 6),                                   // PROTO tcp
		attr(9, le32(5)...),                          // CADT_LINENO, host order
	)
	e2 := cat(
		attr(0x8001, attr(0x4002, v6[:]...)...),
		attr(0x4004, 0, 53),
		attr(7, 17),
		attr(0x4006, 0, 0, 0, 1),
		attr(26, 'x', 0), // COMMENT
		attr(9, le32(6)...),
	)
	want := cat([]byte{2, 0, 0, 0}, attr(1, 7), attr(2, 's', 0), attr(9, le32(5)...),
		attr(0x8008, cat(attr(0x8007, e1...), attr(0x8007, e2...))...))
	if !bytes.Equal(m.Data, want) {
		t.Errorf("adt request:\n got %s\nwant %s", hex.EncodeToString(m.Data), hex.EncodeToString(want))
	}
	if m := adtRequest(7, cmdDel, "s", entries, 1, true); m.Header.Type != 0x060a || m.Header.Flags != 0x200 {
		t.Errorf("strict del header = %#x/%#x", m.Header.Type, m.Header.Flags)
	}
	for i := range entries {
		one := adtRequest(7, cmdAdd, "s", entries[i:i+1], 1, false)
		none := adtRequest(7, cmdAdd, "s", nil, 1, false)
		if got := len(one.Data) - len(none.Data); got != elemSize(&entries[i]) {
			t.Errorf("entry %d: encoded in %d bytes, elemSize says %d", i, got, elemSize(&entries[i]))
		}
	}
}

func le32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// roundTrip encodes e as one element and decodes it back as a set of type t.
func roundTrip(t *testing.T, typ Type, e Entry) Entry {
	t.Helper()
	w := newWriter(nil)
	writeElem(w, &e, 1)
	ad := nlattr.NewDecoder(w.Bytes())
	var r rawElem
	if err := decodeElem(&ad, &r); err != nil || ad.Err() != nil {
		t.Fatalf("decode: %v %v", err, ad.Err())
	}
	got, err := r.entry(typ)
	if err != nil {
		t.Fatalf("entry(%s): %v", typ, err)
	}
	return got
}

func TestElementRoundTrip(t *testing.T) {
	a4, b4 := netip.MustParseAddr("198.18.3.4"), netip.MustParseAddr("198.19.0.9")
	a6 := netip.MustParseAddr("2001:db8::7")
	for _, tc := range []struct {
		t Type
		e Entry
	}{
		{HashIP, Entry{IP: a4}},
		{HashIP, Entry{IP: a6, Timeout: 7 * time.Second}},
		{HashIPPort, Entry{IP: a4, Proto: SCTP, Port: 65535, Comment: "svc a", Packets: 3, Bytes: 1 << 40}},
		{HashIPPort, Entry{IP: a6, Proto: UDP, Port: 0}},
		{HashIPPortIP, Entry{IP: a4, Proto: TCP, Port: 8080, IP2: b4}},
		{HashIPPortNet, Entry{IP: a4, Proto: TCP, Port: 443, Net2: netip.MustParsePrefix("198.18.0.0/15")}},
		{HashIPPortNet, Entry{IP: a6, Proto: UDPLite, Port: 1, Net2: netip.MustParsePrefix("2001:db8::/32")}},
		{HashNet, Entry{Net: netip.MustParsePrefix("198.18.4.0/24")}},
		{HashNet, Entry{Net: netip.MustParsePrefix("2001:db8::1/128")}},
		{HashNetPort, Entry{Net: netip.MustParsePrefix("198.18.0.0/16"), Proto: UDP, Port: 53}},
		{BitmapPort, Entry{Port: 0}},
		{BitmapPort, Entry{Port: 30080}},
	} {
		one := adtRequest(7, cmdAdd, "s", []Entry{tc.e}, 1, false)
		none := adtRequest(7, cmdAdd, "s", nil, 1, false)
		if got := len(one.Data) - len(none.Data); got != elemSize(&tc.e) {
			t.Errorf("%s %v: encoded in %d bytes, elemSize says %d", tc.t, tc.e, got, elemSize(&tc.e))
		}
		if got := roundTrip(t, tc.t, tc.e); got != tc.e {
			t.Errorf("%s: round trip of %+v gave %+v", tc.t, tc.e, got)
		}
	}
}

func TestDecodeListMergesMessages(t *testing.T) {
	head := newWriter([]byte{2, 0, 0, 0})
	head.Uint8(attrProtocol, 7)
	head.String(attrSetName, "s")
	head.String(attrTypeName, "hash:ip,port")
	head.Uint8(attrFamily, nfprotoIPv4)
	head.Uint8(attrRevision, 7)
	n := head.Nest(attrData)
	head.be32(attrHashSize, 2048)
	head.be32(attrMaxElem, 100)
	head.be32(attrTimeout, 60)
	head.be32(attrCADTFlags, cadtWithCounters)
	head.be32(attrElements, 2)
	head.be32(attrRefs, 1)
	head.be32(attrMemSize, 999)
	head.End(n)
	elems := func(w *attrWriter, es ...Entry) {
		n := w.Nest(attrADT)
		for i := range es {
			d := w.Nest(attrData)
			writeElem(w, &es[i], 0)
			w.End(d)
		}
		w.End(n)
	}
	e1 := Entry{IP: netip.MustParseAddr("198.18.0.1"), Proto: TCP, Port: 1, Timeout: 60 * time.Second}
	e2 := Entry{IP: netip.MustParseAddr("198.18.0.2"), Proto: UDP, Port: 2, Packets: 5, Bytes: 6}
	elems(head, e1)
	more := newWriter([]byte{2, 0, 0, 0})
	more.Uint8(attrProtocol, 7)
	more.String(attrSetName, "s")
	elems(more, e2)

	sets, err := mergeList([]netlink.Message{{Data: head.Bytes()}, {Data: more.Bytes()}})
	if err != nil {
		t.Fatal(err)
	}
	want := SetInfo{
		Set: Set{Name: "s", Type: HashIPPort, Family: inet.IPv4, HashSize: 2048, MaxElem: 100,
			Timeouts: true, Timeout: time.Minute, Counters: true},
		Revision: 7, Elements: 2, References: 1, MemSize: 999,
	}
	if len(sets) != 1 || len(sets[0].Entries) != 2 {
		t.Fatalf("got %+v, want one set with two entries", sets)
	}
	got := sets[0]
	if got.Entries[0] != e1 || got.Entries[1] != e2 {
		t.Errorf("entries = %v, want [%v %v]", got.Entries, e1, e2)
	}
	got.Entries = nil
	if got.Set != want.Set || got.Revision != want.Revision || got.Elements != 2 || got.References != 1 || got.MemSize != 999 {
		t.Errorf("header:\n got %+v\nwant %+v", got, want)
	}

	// Members before their header are an error, not a guess.
	if _, err := mergeList([]netlink.Message{{Data: more.Bytes()}}); err == nil {
		t.Error("members without a header: no error")
	}
}

func TestDecodeProtocolAndType(t *testing.T) {
	w := newWriter([]byte{2, 0, 0, 0})
	w.Uint8(attrProtocol, 7)
	w.Uint8(attrProtocolMin, 6)
	if r, err := decodeProtocol(w.Bytes()); err != nil || r != (protocolReply{max: 7, min: 6}) {
		t.Errorf("protocol = %+v, %v", r, err)
	}
	old := newWriter([]byte{2, 0, 0, 0})
	old.Uint8(attrProtocol, 6)
	if r, err := decodeProtocol(old.Bytes()); err != nil || r != (protocolReply{max: 6, min: 6}) {
		t.Errorf("old kernel protocol = %+v, %v", r, err)
	}
	if _, err := decodeProtocol([]byte{2, 0}); err == nil {
		t.Error("short reply: no error")
	}
	ty := newWriter([]byte{2, 0, 0, 0})
	ty.Uint8(attrProtocol, 7)
	ty.String(attrTypeName, "hash:ip")
	ty.Uint8(attrFamily, 2)
	ty.Uint8(attrRevision, 6)
	ty.Uint8(attrRevisionMin, 0)
	if r, err := decodeType(ty.Bytes()); err != nil || r != (typeReply{max: 6, min: 0}) {
		t.Errorf("type = %+v, %v", r, err)
	}
}

func TestErrorClasses(t *testing.T) {
	for _, tc := range []struct {
		op   string
		t    Type
		code int
		want error
	}{
		{"add", HashIP, codeTypeSpecific, ErrSetFull},
		{"add", BitmapPort, codeTypeSpecific, ErrInvalidElement},
		{"add", HashIP, codeExist, ErrElementExists},
		{"del", HashIP, codeExist, ErrElementMissing},
		{"swap", TypeUnknown, codeTypeMismatch, ErrTypeMismatch},
		{"destroy", TypeUnknown, codeBusy, ErrInUse},
		{"rename", TypeUnknown, codeReferenced, ErrInUse},
		{"swap", TypeUnknown, 16, ErrInUse}, // EBUSY
		{"rename", TypeUnknown, codeExistSetName2, ErrSetExists},
		{"create", HashIPPort, codeFindType, ErrNotSupported},
		{"create", HashIP, codeProtocol, ErrProtocol},
		{"add", HashIP, codeComment, ErrNoExtension},
	} {
		err := newError(tc.op, "s", tc.t, tc.code, "")
		if !errorsIs(err, tc.want) {
			t.Errorf("%s code %d on %s: %v does not match %v", tc.op, tc.code, tc.t, err, tc.want)
		}
	}
	if err := newError("create", "s", HashIPPort, codeFindType, ""); !bytes.Contains([]byte(err.Error()), []byte("ip_set_hash_ipport")) {
		t.Errorf("missing type error does not name the module: %v", err)
	}
}

// Family is inet's AF_ number and goes on the wire as it is: that is right
// only while the netfilter NFPROTO_ numbers equal the AF_ ones.
func TestFamilyIsNFProto(t *testing.T) {
	if inet.IPv4 != nfprotoIPv4 || inet.IPv6 != nfprotoIPv6 || FamilyUnspec != nfprotoUnspec {
		t.Fatalf("INet %d, inet.IPv6 %d, FamilyUnspec %d; NFPROTO_ IPV4 %d, IPV6 %d, UNSPEC %d",
			inet.IPv4, inet.IPv6, FamilyUnspec, nfprotoIPv4, nfprotoIPv6, nfprotoUnspec)
	}
}
