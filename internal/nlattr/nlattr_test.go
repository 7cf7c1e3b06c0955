package nlattr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
)

// attr builds one attribute by hand, independently of Encoder.
func attr(typ uint16, v ...byte) []byte {
	b := make([]byte, (4+len(v)+3)/4*4)
	binary.NativeEndian.PutUint16(b, uint16(4+len(v)))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[4:], v)
	return b
}

func cat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

func ne16(v uint16) []byte { return binary.NativeEndian.AppendUint16(nil, v) }
func ne32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

func TestEncoder(t *testing.T) {
	for _, c := range []struct {
		name string
		enc  func(e *Encoder)
		want []byte
	}{
		{"u8", func(e *Encoder) { e.Uint8(1, 7) }, attr(1, 7)},
		{"u16", func(e *Encoder) { e.Uint16(2, 0x0102) }, attr(2, ne16(0x0102)...)},
		{"be16", func(e *Encoder) { e.Uint16BE(3, 0x0102) }, attr(3, 1, 2)},
		{"be16 flagged", func(e *Encoder) { e.Uint16BE(3|NetByteOrder, 0x0102) }, attr(0x4003, 1, 2)},
		{"u32", func(e *Encoder) { e.Uint32(4, 9) }, attr(4, ne32(9)...)},
		{"be32", func(e *Encoder) { e.Uint32BE(5, 0x01020304) }, attr(5, 1, 2, 3, 4)},
		{"be64", func(e *Encoder) { e.Uint64BE(6, 0x0102030405060708) }, attr(6, 1, 2, 3, 4, 5, 6, 7, 8)},
		{"string", func(e *Encoder) { e.String(7, "abc") }, attr(7, 'a', 'b', 'c', 0)},
		{"string padded", func(e *Encoder) { e.String(7, "abcd") }, attr(7, 'a', 'b', 'c', 'd', 0)},
		{"bytes", func(e *Encoder) { e.Attr(8, []byte{1, 2, 3}) }, attr(8, 1, 2, 3)},
		{"ipv4", func(e *Encoder) { e.Addr(9, netip.MustParseAddr("198.18.0.1")) }, attr(9, 198, 18, 0, 1)},
		{"ipv6", func(e *Encoder) { e.Addr(9, netip.MustParseAddr("2001:db8::1")) },
			attr(9, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)},
		{"raw", func(e *Encoder) { e.Raw(attr(8, 1, 2, 3)[:7]); e.Raw(nil) }, attr(8, 1, 2, 3)},
		{"nest", func(e *Encoder) {
			n := e.Nest(10)
			e.Uint8(1, 1)
			m := e.Nest(11)
			e.End(m)
			e.End(n)
		}, attr(10|Nested, cat(attr(1, 1), attr(11|Nested))...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := NewEncoder([]byte{0xaa, 0xbb, 0xcc, 0xdd})
			c.enc(e)
			want := cat([]byte{0xaa, 0xbb, 0xcc, 0xdd}, c.want)
			if !bytes.Equal(e.Bytes(), want) || e.Err() != nil {
				t.Fatalf("got % x (err %v), want % x", e.Bytes(), e.Err(), want)
			}
		})
	}
}

func TestEncoderTooLong(t *testing.T) {
	var e Encoder
	e.Attr(1, make([]byte, maxLen-4))
	if e.Err() != nil {
		t.Fatalf("65535 bytes: %v", e.Err())
	}
	e.Attr(2, make([]byte, maxLen-3))
	e.Uint8(3, 1)
	if !errors.Is(e.Err(), ErrTooLong) {
		t.Fatalf("65536 bytes: err = %v", e.Err())
	}
	var n Encoder
	off := n.Nest(4)
	n.Attr(1, make([]byte, maxLen-8))
	n.Uint8(2, 1)
	n.End(off)
	if !errors.Is(n.Err(), ErrTooLong) {
		t.Fatalf("long nest: err = %v", n.Err())
	}
}

func TestDecoder(t *testing.T) {
	b := cat(attr(1, ne32(7)...), attr(2|Nested, attr(3, 'x', 0)...), attr(4, 1, 2, 3)) // 3-byte value, padded
	d := NewDecoder(b)
	var got []uint16
	for d.Next() {
		got = append(got, d.Type())
		switch d.Type() {
		case 1:
			if d.Uint32() != 7 || d.TypeFlags() != 0 {
				t.Fatal("u32")
			}
		case 2: // NLA_F_NESTED is masked off; the value is the inner attributes
			in := d.Nested()
			if d.TypeFlags() != Nested || !in.Next() || in.Type() != 3 || in.String() != "x" || in.Next() || in.Err() != nil {
				t.Fatal("nested")
			}
		case 4:
			if len(d.Bytes()) != 3 || len(d.Raw()) != 7 {
				t.Fatalf("value of %d bytes, attribute of %d; want 3 and 7", len(d.Bytes()), len(d.Raw()))
			}
			_ = d.Uint16() // wrong size: sticks as the error
		}
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 4 || d.Err() == nil {
		t.Fatalf("types %v, err %v; want [1 2 4] and a size error", got, d.Err())
	}
	for _, cut := range []int{2, 6} { // in the first header, in its value
		d = NewDecoder(b[:cut])
		if d.Next() || !errors.Is(d.Err(), ErrTruncated) {
			t.Fatalf("cut at %d: err = %v", cut, d.Err())
		}
	}
	d = NewDecoder(attr(1, 0, 0)[:6]) // the last attribute's padding missing
	if !d.Next() || d.Uint16() != 0 || d.Next() || d.Err() != nil {
		t.Fatalf("unpadded last attribute: err = %v", d.Err())
	}
}

func TestDecoderValues(t *testing.T) {
	for _, c := range []struct {
		name string
		b    []byte
		read func(d *Decoder) uint64
		want uint64
		ok   bool
	}{
		{"u8", attr(1, 7), func(d *Decoder) uint64 { return uint64(d.Uint8()) }, 7, true},
		{"u16", attr(1, ne16(258)...), func(d *Decoder) uint64 { return uint64(d.Uint16()) }, 258, true},
		{"be16", attr(1, 1, 2), func(d *Decoder) uint64 { return uint64(d.Uint16BE()) }, 258, true},
		{"u32", attr(1, ne32(70000)...), func(d *Decoder) uint64 { return uint64(d.Uint32()) }, 70000, true},
		{"be32", attr(1, 0, 1, 0, 0), func(d *Decoder) uint64 { return uint64(d.Uint32BE()) }, 65536, true},
		{"u64", attr(1, binary.NativeEndian.AppendUint64(nil, 1<<40)...), func(d *Decoder) uint64 { return d.Uint64() }, 1 << 40, true},
		{"be64", attr(1, 0, 0, 0, 1, 0, 0, 0, 0), func(d *Decoder) uint64 { return d.Uint64BE() }, 1 << 32, true},
		{"counter32", attr(1, ne32(5)...), func(d *Decoder) uint64 { return d.Counter() }, 5, true},
		{"counter64", attr(1, binary.NativeEndian.AppendUint64(nil, 6)...), func(d *Decoder) uint64 { return d.Counter() }, 6, true},
		{"counter of 2", attr(1, 0, 0), func(d *Decoder) uint64 { return d.Counter() }, 0, false},
		{"u32 of 2", attr(1, 0, 0), func(d *Decoder) uint64 { return uint64(d.Uint32()) }, 0, false},
		{"u8 of 0", attr(1), func(d *Decoder) uint64 { return uint64(d.Uint8()) }, 0, false},
		{"be64 of 4", attr(1, 0, 0, 0, 1), func(d *Decoder) uint64 { return d.Uint64BE() }, 0, false},
	} {
		d := NewDecoder(c.b)
		if !d.Next() {
			t.Fatalf("%s: %v", c.name, d.Err())
		}
		if got := c.read(&d); got != c.want || (d.Err() == nil) != c.ok {
			t.Errorf("%s: %d, err %v; want %d, ok %v", c.name, got, d.Err(), c.want, c.ok)
		}
	}
}

func TestDecoderString(t *testing.T) {
	for _, c := range []struct {
		v    []byte
		want string
	}{{[]byte("ab\x00"), "ab"}, {[]byte("ab"), "ab"}, {[]byte("a\x00b\x00"), "a"}, {nil, ""}} {
		d := NewDecoder(attr(1, c.v...))
		if !d.Next() || d.String() != c.want {
			t.Errorf("% x: %q, want %q", c.v, d.String(), c.want)
		}
	}
}

// A caller's Fail stops the walk and keeps the first error.
func TestDecoderFail(t *testing.T) {
	first, second := errors.New("first"), errors.New("second")
	d := NewDecoder(cat(attr(1), attr(2)))
	d.Next()
	d.Fail(first)
	d.Fail(second)
	if d.Next() || d.Err() != first {
		t.Fatalf("err = %v, want %v", d.Err(), first)
	}
}

// The codec must not allocate: ipvs and ipset run it over millions of
// attributes.
func TestNoAllocs(t *testing.T) {
	buf := make([]byte, 0, 256)
	var sum uint64
	n := testing.AllocsPerRun(100, func() {
		e := NewEncoder(buf[:0])
		off := e.Nest(1)
		e.Uint16BE(2|NetByteOrder, 80)
		e.Uint32(3, 7)
		e.String(4, "rr")
		e.End(off)
		d := NewDecoder(e.Bytes())
		for d.Next() {
			in := d.Nested()
			for in.Next() {
				switch in.Type() {
				case 2:
					sum += uint64(in.Uint16BE())
				case 3:
					sum += uint64(in.Uint32())
				case 4:
					sum += uint64(len(in.Bytes()))
				}
			}
			if in.Err() != nil {
				t.Fatal(in.Err())
			}
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per encode and decode, want 0", n)
	}
	_ = sum
}
