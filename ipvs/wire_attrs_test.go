package ipvs

import (
	"errors"
	"testing"
)

func TestAttrs(t *testing.T) {
	b := cat(attr(1, u32(7)...), nest(2, attr(3, 'x', 0)), attr(4, 1, 2, 3)) // 3-byte payload, padded
	a := attrs{b: b}
	var got []uint16
	for a.next() {
		got = append(got, a.typ)
		switch a.typ {
		case 1:
			if a.u32() != 7 {
				t.Fatal("u32")
			}
		case 2: // NLA_F_NESTED is masked off; the payload is the inner attributes
			in := attrs{b: a.val}
			if !in.next() || in.typ != 3 || in.str() != "x" {
				t.Fatal("nested")
			}
		case 4:
			if len(a.val) != 3 {
				t.Fatalf("payload of %d bytes, want 3", len(a.val))
			}
			_ = a.u16() // wrong size: sticks as the error
		}
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 4 || a.err == nil {
		t.Fatalf("types %v, err %v; want [1 2 4] and a size error", got, a.err)
	}
	a = attrs{b: b[:6]} // the first attribute cut short
	if a.next() || !errors.Is(a.err, errShortAttr) {
		t.Fatalf("truncated: err = %v", a.err)
	}
}

// A family or protocol the kernel sends as a u16 above 255 is an error, not
// read as its low byte (258 would be AF_INET).
func TestAttrsU16Small(t *testing.T) {
	for _, c := range []struct {
		v    uint16
		ok   bool
		want uint8
	}{{10, true, 10}, {255, true, 255}, {258, false, 2}} {
		a := attrs{b: attr(1, u16(c.v)...)}
		if !a.next() {
			t.Fatal(a.err)
		}
		if got := a.u16small(); (a.err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("u16small of %d = %d, err %v; want ok %v", c.v, got, a.err, c.ok)
		}
	}
}
