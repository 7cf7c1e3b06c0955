package nlattr

import (
	"bytes"
	"testing"
)

// walk decodes b, descending into every attribute flagged as nested, and
// re-encodes what it read. It never panics.
func walk(b []byte, e *Encoder, depth int) error {
	d := NewDecoder(b)
	for d.Next() {
		if d.TypeFlags()&Nested != 0 && depth < 8 {
			off := e.Nest(d.Type() | d.TypeFlags())
			if err := walk(d.Bytes(), e, depth+1); err != nil {
				return err
			}
			e.End(off)
			continue
		}
		e.Attr(d.Type()|d.TypeFlags(), d.Bytes())
		_, _, _, _ = d.Uint8(), d.Uint16BE(), d.Uint32(), d.Counter()
		_ = d.String()
	}
	return d.Err()
}

// FuzzDecoder: no input panics the Decoder, and input that decodes cleanly
// and is fully padded encodes back to itself.
func FuzzDecoder(f *testing.F) {
	e := NewEncoder(nil)
	n := e.Nest(1)
	e.Uint16BE(2|NetByteOrder, 80)
	e.String(3, "x")
	e.End(n)
	e.Uint32(4, 7)
	f.Add(e.Bytes())
	f.Add([]byte{4, 0, 1, 0, 5, 0, 2, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		var out Encoder
		if walk(b, &out, 0) != nil || len(b)%4 != 0 || !padded(b, 0) {
			return
		}
		if !bytes.Equal(out.Bytes(), b) {
			t.Fatalf("re-encoded % x, want % x", out.Bytes(), b)
		}
	})
}

// padded reports whether every attribute of b (down to nests walk enters)
// has zero padding and a length that is a multiple of 4 where it nests,
// the only input that encodes back to itself byte for byte.
func padded(b []byte, depth int) bool {
	d := NewDecoder(b)
	for d.Next() {
		raw := d.Raw()
		end := min(align4(len(raw)), len(b)-offset(b, raw))
		pad := b[offset(b, raw)+len(raw) : offset(b, raw)+end]
		if !bytes.Equal(pad, make([]byte, len(pad))) || end != align4(len(raw)) {
			return false
		}
		if d.TypeFlags()&Nested != 0 && depth < 8 && (len(d.Bytes())%4 != 0 || !padded(d.Bytes(), depth+1)) {
			return false
		}
	}
	return d.Err() == nil
}

// offset is where sub starts in b (sub aliases b).
func offset(b, sub []byte) int { return cap(b) - cap(sub) }
