package ipvs

import (
	"testing"

	"github.com/ipvskit/ipvskit/internal/nlattr"
)

// The attribute walk itself is tested in internal/nlattr (TestDecoder).

// A family or protocol the kernel sends as a u16 above 255 is an error, not
// read as its low byte (258 would be AF_INET).
func TestAttrsU16Small(t *testing.T) {
	for _, c := range []struct {
		v    uint16
		ok   bool
		want uint8
	}{{10, true, 10}, {255, true, 255}, {258, false, 2}} {
		a := nlattr.NewDecoder(attr(1, u16(c.v)...))
		if !a.Next() {
			t.Fatal(a.Err())
		}
		if got := u16small(&a); (a.Err() == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("u16small of %d = %d, err %v; want ok %v", c.v, got, a.Err(), c.ok)
		}
	}
}
