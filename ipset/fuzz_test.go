package ipset

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mdlayher/netlink"
)

// The decoders must never panic on what the kernel (or anyone) sends.
func FuzzDecodeList(f *testing.F) {
	w := newWriter([]byte{2, 0, 0, 0})
	w.Uint8(attrProtocol, 7)
	w.String(attrSetName, "s")
	w.String(attrTypeName, "hash:net,port")
	w.Uint8(attrFamily, 10)
	n := w.Nest(attrADT)
	d := w.Nest(attrData)
	e := Entry{Net: netipPrefix("2001:db8::/64"), Proto: TCP, Port: 1, Comment: "c"}
	writeElem(w, &e, 0)
	w.End(d)
	w.End(n)
	f.Add(w.Bytes())
	f.Add(adtRequest(7, cmdAdd, "s", []Entry{{IP: netipAddr("198.18.0.1"), Proto: UDP, Port: 2, IP2: netipAddr("198.18.0.2")}}, 1, false).Data)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, ty := range []string{"", "hash:ip", "bitmap:port", "hash:ip,port,net"} {
			b := data
			if ty != "" {
				w := newWriter([]byte{2, 0, 0, 0})
				w.String(attrSetName, "s")
				w.String(attrTypeName, ty)
				b = append(w.Bytes(), data...)
			}
			sets, err := mergeList([]netlink.Message{{Data: b}, {Data: b}})
			if err == nil {
				// Whatever decodes must render as text without panicking.
				var out bytes.Buffer
				_ = WriteText(&out, sets)
			}
		}
		_, _ = decodeProtocol(data)
		_, _ = decodeType(data)
	})
}

func FuzzParseText(f *testing.F) {
	f.Add(savedByIPSet)
	f.Add("create x hash:ip,port,ip family inet6 timeout 5\nadd x 2001:db8::1,udp:1,2001:db8::2 timeout 3\n")
	f.Fuzz(func(t *testing.T, text string) {
		sets, err := ParseText(strings.NewReader(text))
		if err != nil {
			return
		}
		// Anything parsed renders and parses back to the same text.
		var a, b bytes.Buffer
		if err := WriteText(&a, sets); err != nil {
			t.Fatalf("parsed sets do not render: %v", err)
		}
		again, err := ParseText(bytes.NewReader(a.Bytes()))
		if err != nil {
			t.Fatalf("rendered text does not parse: %v\n%s", err, a.String())
		}
		if err := WriteText(&b, again); err != nil || a.String() != b.String() {
			t.Fatalf("render not stable:\n%s\n%s", a.String(), b.String())
		}
	})
}

func FuzzParseEntry(f *testing.F) {
	f.Add(uint8(HashIPPort), "198.18.0.1,tcp:80")
	f.Add(uint8(HashNet), "2001:db8::/32")
	f.Fuzz(func(t *testing.T, typ uint8, s string) {
		ty := Type(typ)
		e, err := ParseEntry(ty, s)
		if err != nil {
			return
		}
		// A parsed entry formats to text that parses back to it.
		e2, err := ParseEntry(ty, e.format(ty))
		if err != nil || e2 != e {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, e, e.format(ty), e2, err)
		}
	})
}
