package proxier

import (
	"testing"

	"github.com/ipvskit/ipvskit/ipvs"
)

func TestDestSetKeepsOnePerKeySorted(t *testing.T) {
	d := func(addr string, port uint16, w uint32) ipvs.Destination {
		return ipvs.Destination{Addr: a(addr), Port: port, Weight: w}
	}
	s := newDestSet([]ipvs.Destination{d("198.18.0.2", 80, 1), d("198.18.0.1", 81, 1), d("198.18.0.2", 80, 2), d("198.18.0.1", 80, 1)})
	want := destSet{d("198.18.0.1", 80, 1), d("198.18.0.1", 81, 1), d("198.18.0.2", 80, 2)} // the last of a key wins
	if !s.equal(want) {
		t.Fatalf("newDestSet = %v, want %v", s, want)
	}
	c := s.clone()
	c.set(d("198.18.0.1", 79, 1))
	c.set(d("198.18.0.2", 80, 0))
	c.remove(d("198.18.0.1", 81, 0).Key())
	c.remove(d("198.18.0.9", 1, 0).Key())
	if want := (destSet{d("198.18.0.1", 79, 1), d("198.18.0.1", 80, 1), d("198.18.0.2", 80, 0)}); !c.equal(want) {
		t.Fatalf("after set and remove: %v, want %v", c, want)
	}
	if got, ok := s.get(d("198.18.0.2", 80, 0).Key()); !ok || got.Weight != 2 || s.has(d("198.18.0.1", 79, 0).Key()) {
		t.Fatalf("the clone's changes reached the original: %v", s)
	}
}
