package ipvs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"testing"

	"github.com/ipvskit/ipvskit/internal/nlconn/nlconntest"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// snapshotFixture is three services, the second without destinations, and
// the kernel's replies for them.
type snapshotFixture struct {
	svcs  []Service
	dests [][]Destination
}

func newSnapshotFixture() snapshotFixture {
	svc := func(last byte, sched string) Service {
		return Service{Family: IPv4, Protocol: TCP, Addr: netip.AddrFrom4([4]byte{198, 18, 100, last}), Port: 80, Scheduler: sched}
	}
	dest := func(last byte, w uint32) Destination {
		return Destination{Family: IPv4, Addr: netip.AddrFrom4([4]byte{198, 19, 0, last}), Port: 8080, Forward: Masq, Weight: w}
	}
	return snapshotFixture{
		svcs:  []Service{svc(1, "rr"), svc(2, "wrr"), svc(3, "lc")},
		dests: [][]Destination{{dest(1, 1), dest(2, 2)}, nil, {dest(3, 3)}},
	}
}

// serviceDump is the service dump's call, answering with every service.
func (f snapshotFixture) serviceDump() nlconntest.Call {
	req := ipvsReq(cmdGetService, nil)
	for _, s := range f.svcs {
		req.Replies = append(req.Replies, netlink.Message{Header: netlink.Header{Type: testFamily}, Data: serviceRequest(cmdNewService, s, true)})
	}
	return nlconntest.Call{Op: nlconntest.Execute, Requests: []nlconntest.Request{req}}
}

// destDump is service i's destination dump: the request must name it; the
// answer is its destinations, or err.
func (f snapshotFixture) destDump(i int, err error) nlconntest.Call {
	want := serviceRequest(cmdGetDest, keyService(f.svcs[i].Key()), false)
	req := nlconntest.Request{
		Check: nlconntest.All(nlconntest.HeaderType(testFamily), func(m netlink.Message) error {
			if !bytes.Equal(m.Data, want) {
				return fmt.Errorf("destination dump request %x, want %x (service %v)", m.Data, want, f.svcs[i].Key())
			}
			return nil
		}),
		Err: err,
	}
	for _, d := range f.dests[i] {
		req.Replies = append(req.Replies, netlink.Message{Header: netlink.Header{Type: testFamily}, Data: destRequest(cmdNewDest, f.svcs[i].Key(), d, true)})
	}
	return nlconntest.Call{Op: nlconntest.Dump, Requests: []nlconntest.Request{req}}
}

// Snapshot lists the services in the kernel's order, each with its own
// destinations (an empty list, not nil, for none).
func TestSnapshotSeam(t *testing.T) {
	f := newSnapshotFixture()
	c, _ := scriptedClient(t, f.serviceDump(), f.destDump(0, nil), f.destDump(1, nil), f.destDump(2, nil))
	snap, err := c.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var want Snapshot
	for i, s := range f.svcs {
		ss := ServiceSnapshot{ServiceInfo: ServiceInfo{Service: s}, Destinations: []DestinationInfo{}}
		for _, d := range f.dests[i] {
			ss.Destinations = append(ss.Destinations, DestinationInfo{Destination: d})
		}
		want.Services = append(want.Services, ss)
	}
	if !reflect.DeepEqual(snap, want) {
		t.Fatalf("Snapshot:\n got %+v\nwant %+v", snap, want)
	}
}

// A destination dump's failure ends Snapshot with an error naming that
// service and wrapping the cause; no later service is asked for.
func TestSnapshotSeamErrors(t *testing.T) {
	f := newSnapshotFixture()
	malformed := f.destDump(1, nil)
	malformed.Requests[0].Replies = []netlink.Message{{Header: netlink.Header{Type: testFamily}, Data: genlHdr(cmdNewDest)}}
	for _, tc := range []struct {
		name  string
		call  nlconntest.Call
		check func(error) bool
	}{
		{"kernel error", f.destDump(1, nlconntest.Errno(unix.EPERM)), func(err error) bool { return errors.Is(err, unix.EPERM) }},
		{"malformed reply", malformed, func(err error) bool { return errors.Is(err, errMissing) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := scriptedClient(t, f.serviceDump(), f.destDump(0, nil), tc.call)
			_, err := c.Snapshot(context.Background())
			var e *Error
			if !errors.As(err, &e) || !tc.check(err) || e.Op != "list destinations" || e.Object != f.svcs[1].Key().String() {
				t.Fatalf("Snapshot = %v; want an *Error of list destinations naming %v", err, f.svcs[1].Key())
			}
		})
	}
	t.Run("service dump", func(t *testing.T) {
		call := f.serviceDump()
		call.Requests[0].Err = nlconntest.Errno(unix.EPERM)
		c, _ := scriptedClient(t, call)
		_, err := c.Snapshot(context.Background())
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, unix.EPERM) || e.Op != "list services" {
			t.Fatalf("Snapshot = %v; want an *Error of list services wrapping EPERM", err)
		}
	})
}
