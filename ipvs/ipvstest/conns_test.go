package ipvstest

import (
	"testing"

	"github.com/ipvskit/ipvskit/ipvs"
)

// SetConns sets what Destinations reports, only for the destination named,
// and the counts survive a weight change as in the kernel.
func TestSetConns(t *testing.T) {
	f := New()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.AddService(ctx, web))
	must(f.AddDestination(ctx, web.Key(), be1))
	must(f.AddDestination(ctx, web.Key(), be2))
	if !f.SetConns(web.Key(), be1.Key(), 3, 2, 1) {
		t.Fatal("SetConns on an existing destination reported false")
	}
	if f.SetConns(none, be1.Key(), 1, 1, 1) || f.SetConns(web.Key(), ipvs.DestinationKey{Addr: be1.Addr, Port: 1}, 1, 1, 1) {
		t.Fatal("SetConns on a missing service or destination reported true")
	}
	quiesced := be1
	quiesced.Weight = 0
	must(f.UpdateDestination(ctx, web.Key(), quiesced))
	ds, err := f.Destinations(ctx, web.Key())
	must(err)
	got := map[ipvs.DestinationKey][4]uint32{}
	for _, d := range ds {
		got[d.Key()] = [4]uint32{d.Weight, d.ActiveConns, d.InactiveConns, d.PersistentConns}
	}
	if got[be1.Key()] != [4]uint32{0, 3, 2, 1} || got[be2.Key()] != [4]uint32{2, 0, 0, 0} {
		t.Errorf("weight, active, inactive, persistent by destination: %v", got)
	}
}
