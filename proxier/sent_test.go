package proxier

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/ipvs"
)

// The outcomes the fault sweep's fakes never produce: an invalid batch, a
// batch cut short with requests in flight, a link call failed as a whole.
func TestOutcomesOfCallsTheSweepCannotMake(t *testing.T) {
	svc := ipvs.Service{Protocol: ipvs.TCP, Addr: netip.MustParseAddr("198.18.100.1"), Port: 80, Scheduler: "rr"}
	var b ipvs.Batch
	b.AddService(svc)
	b.AddService(ipvs.Service{Protocol: ipvs.TCP, Addr: netip.MustParseAddr("198.18.100.2"), Port: 80, Scheduler: "rr"})
	b.DeleteService(ipvs.ServiceKey{Protocol: ipvs.TCP, Addr: netip.MustParseAddr("198.18.100.3"), Port: 80})

	if o := ipvsOutcome(&b, errors.New("invalid batch")); o.sent != 0 || serverChanges(&b, o) != 0 {
		t.Errorf("a batch refused as a whole: sent %d, servers %+d; want 0, 0", o.sent, serverChanges(&b, o))
	}
	// Cut short: request 1 in flight (outcome unknown), 2 never sent.
	be := &ipvs.BatchError{Total: 3, Err: errors.New("socket closed"), Failed: []ipvs.FailedOp{
		{Index: 1, Err: errors.New("outcome unknown")},
		{Index: 2, Err: fmt.Errorf("%w: socket closed", ipvs.ErrNotSent)},
	}}
	if o := ipvsOutcome(&b, be); o.sent != 2 || serverChanges(&b, o) != 1 {
		t.Errorf("a batch cut short: sent %d, servers %+d; want 2 (the one in flight counts), +1", o.sent, serverChanges(&b, o))
	}
	if o := ipvsOutcome(&b, nil); o.sent != 3 || serverChanges(&b, o) != 1 {
		t.Errorf("a batch applied: sent %d, servers %+d; want 3, +1", o.sent, serverChanges(&b, o))
	}

	add := []netip.Addr{netip.MustParseAddr("198.18.100.1"), netip.MustParseAddr("2001:db8:100::1")}
	remove := []netip.Addr{netip.MustParseAddr("198.18.100.9")}
	whole := &dummy.Error{Op: "update", Link: "ipvskit0", Err: errors.New("no such link")}
	if o := linkOutcome(3, whole); o.sent != 0 || vipChanges(add, remove, o) != 0 {
		t.Errorf("a link call failed as a whole: sent %d, vips %+d; want 0, 0", o.sent, vipChanges(add, remove, o))
	}
	one := errors.Join(&dummy.Error{Op: "bind", Link: "ipvskit0", Addr: netip.MustParsePrefix("2001:db8:100::1/128"), Err: errors.New("refused")})
	if o := linkOutcome(3, one); o.sent != 3 || vipChanges(add, remove, o) != 0 {
		t.Errorf("one bind refused: sent %d, vips %+d; want 3, 0 (one bound, one unbound)", o.sent, vipChanges(add, remove, o))
	}
}
