package ipvs

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/nlconn"
	"github.com/ipvskit/ipvskit/internal/nlconn/nlconntest"
	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Unit tests of the client's logic over a scripted transport: the paths that
// otherwise only the VM rig's kernel reaches.

// testFamily is the family ID the scripted controller hands out; any value
// other than a real kernel's would do.
const testFamily = netlink.HeaderType(0x2a7)

// getFamily is the controller's request for the IPVS family, answered with
// reply or refused with err.
func getFamily(t *testing.T, id netlink.HeaderType, err error) nlconntest.Call {
	req := nlconntest.Request{
		Check: func(m netlink.Message) error {
			if m.Header.Type != unix.GENL_ID_CTRL {
				return errors.New("not sent to the generic netlink controller")
			}
			var gm genetlink.Message
			if err := gm.UnmarshalBinary(m.Data); err != nil {
				return err
			}
			if gm.Header.Command != unix.CTRL_CMD_GETFAMILY {
				return errors.New("not CTRL_CMD_GETFAMILY")
			}
			ad, err := netlink.NewAttributeDecoder(gm.Data)
			if err != nil {
				return err
			}
			name := ""
			for ad.Next() {
				if ad.Type() == unix.CTRL_ATTR_FAMILY_NAME {
					name = ad.String()
				}
			}
			if name != "IPVS" {
				return errors.New("asks for family " + name)
			}
			return nil
		},
		Err: err,
	}
	if err == nil {
		ae := netlink.NewAttributeEncoder()
		ae.String(unix.CTRL_ATTR_FAMILY_NAME, "IPVS")
		ae.Uint16(unix.CTRL_ATTR_FAMILY_ID, uint16(id))
		attrs, aerr := ae.Encode()
		if aerr != nil {
			t.Fatal(aerr)
		}
		data, merr := (&genetlink.Message{Header: genetlink.Header{Command: unix.CTRL_CMD_NEWFAMILY, Version: 2}, Data: attrs}).MarshalBinary()
		if merr != nil {
			t.Fatal(merr)
		}
		req.Replies = []netlink.Message{{Header: netlink.Header{Type: unix.GENL_ID_CTRL}, Data: data}}
	}
	return nlconntest.Call{Op: nlconntest.Execute, Requests: []nlconntest.Request{req}}
}

// ipvsReq checks that a request goes to the resolved IPVS family with cmd.
func ipvsReq(cmd uint8, err error) nlconntest.Request {
	return nlconntest.Request{
		Check: nlconntest.All(nlconntest.HeaderType(testFamily), nlconntest.GenlCommand(cmd)),
		Err:   err,
	}
}

func scriptedClient(t *testing.T, calls ...nlconntest.Call) (*Client, *nlconntest.Script) {
	t.Helper()
	s := nlconntest.New(t, append([]nlconntest.Call{getFamily(t, testFamily, nil)}, calls...)...)
	c, err := initClient(context.Background(), s)
	if err != nil {
		t.Fatalf("initClient: %v", err)
	}
	return &Client{c: c}, s
}

func TestFamilyResolution(t *testing.T) {
	c, _ := scriptedClient(t, nlconntest.Call{Op: nlconntest.Execute, Requests: []nlconntest.Request{ipvsReq(cmdFlush, nil)}})
	if c.c.family != testFamily {
		t.Errorf("family ID %#x, want the controller's %#x", c.c.family, testFamily)
	}
	// Later requests go to that family (ipvsReq checks it).
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestFamilyResolutionFailures(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		notSupp    bool
		wantIs     error
		wantInText string
	}{
		{"no IPVS in the kernel", nlconntest.Errno(unix.ENOENT), true, ErrNotSupported, "module ip_vs"},
		{"not allowed", nlconntest.Errno(unix.EPERM), false, fs.ErrPermission, "IPVS"},
		{"socket trouble", nlconn.ErrRepliesLost, false, nlconn.ErrRepliesLost, "IPVS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := nlconntest.New(t, getFamily(t, 0, tc.err))
			_, err := initClient(context.Background(), s)
			if !errors.Is(err, tc.wantIs) || errors.Is(err, ErrNotSupported) != tc.notSupp {
				t.Fatalf("initClient = %v; want it to wrap %v, ErrNotSupported %v", err, tc.wantIs, tc.notSupp)
			}
			if !strings.Contains(err.Error(), tc.wantInText) {
				t.Errorf("error %q does not name %q", err, tc.wantInText)
			}
		})
	}
}

func TestFamilyResolutionWithoutID(t *testing.T) {
	call := getFamily(t, testFamily, nil)
	// A reply that names the family but carries no ID.
	ae := netlink.NewAttributeEncoder()
	ae.String(unix.CTRL_ATTR_FAMILY_NAME, "IPVS")
	attrs, _ := ae.Encode()
	data, _ := (&genetlink.Message{Header: genetlink.Header{Command: unix.CTRL_CMD_NEWFAMILY}, Data: attrs}).MarshalBinary()
	call.Requests[0].Replies = []netlink.Message{{Data: data}}
	if _, err := initClient(context.Background(), nlconntest.New(t, call)); err == nil || !strings.Contains(err.Error(), "no family ID") {
		t.Fatalf("initClient = %v, want an error saying the reply has no family ID", err)
	}
}

func TestApplyMapsEachKernelErrorToItsRequest(t *testing.T) {
	var b Batch
	b.AddService(svcN(1))
	b.AddDestination(svcN(1).Key(), destN(1))
	b.AddDestination(svcN(2).Key(), destN(2)) // the kernel: no such service
	b.UpdateService(svcN(3))
	b.AddService(svcN(4)) // the kernel: exists
	b.DeleteDestination(svcN(1).Key(), destN(9).Key())
	refused := &nlconn.Error{Errno: unix.EEXIST, Message: "service exists"}
	c, s := scriptedClient(t, nlconntest.Call{
		Op:      nlconntest.Batch,
		Options: &nlconn.BatchOptions{},
		Requests: []nlconntest.Request{
			ipvsReq(cmdNewService, nil),
			ipvsReq(cmdNewDest, nil),
			ipvsReq(cmdNewDest, nlconntest.Errno(unix.ESRCH)),
			ipvsReq(cmdSetService, nil),
			ipvsReq(cmdNewService, refused),
			ipvsReq(cmdDelDest, nil),
		},
	})
	err := c.Apply(context.Background(), &b)
	var be *BatchError
	if !errors.As(err, &be) || be.Err != nil || be.Total != 6 || len(be.Failed) != 2 {
		t.Fatalf("Apply = %v; want a *BatchError with 2 of 6 failed", err)
	}
	for i, want := range []struct {
		index  int
		op     string
		object string
		is     error
		msg    string
	}{
		{2, "add destination", "tcp 198.18.0.2:80 destination 198.19.0.2:8080", fs.ErrNotExist, ""},
		{4, "add service", "tcp 198.18.0.4:80", fs.ErrExist, "service exists"},
	} {
		f := be.Failed[i]
		var e *Error
		if f.Index != want.index || f.Op != b.Ops()[want.index] || !errors.As(f.Err, &e) {
			t.Fatalf("failure %d: index %d, op %+v, err %v; want index %d", i, f.Index, f.Op, f.Err, want.index)
		}
		if e.Op != want.op || e.Object != want.object || !errors.Is(e, want.is) || e.Message != want.msg {
			t.Errorf("failure %d: %q %q %v (kernel: %q); want %q %q wrapping %v (kernel: %q)",
				i, e.Op, e.Object, e.Err, e.Message, want.op, want.object, want.is, want.msg)
		}
	}
	if len(s.Seen()) != 1+6 {
		t.Errorf("%d requests sent, want the family lookup and 6", len(s.Seen()))
	}
}

func TestApplyCutShort(t *testing.T) {
	var b Batch
	b.StopOnError = true
	b.AddService(svcN(1))
	b.AddService(svcN(2))
	c, _ := scriptedClient(t, nlconntest.Call{
		Op:      nlconntest.Batch,
		Options: &nlconn.BatchOptions{StopOnError: true},
		Requests: []nlconntest.Request{
			ipvsReq(cmdNewService, nil),
			ipvsReq(cmdNewService, nil),
		},
		Err: context.DeadlineExceeded,
	})
	err := c.Apply(context.Background(), &b)
	var be *BatchError
	if !errors.As(err, &be) || !errors.Is(be.Err, context.DeadlineExceeded) || len(be.Failed) != 2 {
		t.Fatalf("Apply = %v; want a *BatchError cut short by the deadline, both requests' outcomes unknown", err)
	}
}

func TestApplyInvalidSendsNothing(t *testing.T) {
	var b Batch
	b.AddService(svcN(1))
	b.AddService(Service{Protocol: TCP, Port: 80, Scheduler: "rr"}) // no address
	c, s := scriptedClient(t)
	var ve *ValidationError
	if err := c.Apply(context.Background(), &b); !errors.As(err, &ve) {
		t.Fatalf("Apply = %v, want a *ValidationError", err)
	}
	if len(s.Seen()) != 1 {
		t.Errorf("%d requests sent after the family lookup, want none", len(s.Seen())-1)
	}
}

// The stop goes out with a fence behind it in one send: a non-dump
// GET_DAEMON, which the kernel always refuses, so that its reply ends the
// batch even when the stop itself gets no answer.
func fence(err error) nlconntest.Request {
	r := ipvsReq(cmdGetDaemon, err)
	check := r.Check
	r.Check = func(m netlink.Message) error {
		if m.Header.Flags&netlink.Dump != 0 {
			return errors.New("the fence is a dump: the kernel would answer it")
		}
		return check(m)
	}
	return r
}

func TestStopDaemonFence(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stopErr error
		wantIs  error
	}{
		{"stopped", nil, nil},
		{"none running", nlconntest.Errno(unix.ESRCH), fs.ErrNotExist},
		{"not allowed", nlconntest.Errno(unix.EPERM), fs.ErrPermission},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := scriptedClient(t, nlconntest.Call{
				Op:       nlconntest.Batch,
				Options:  &nlconn.BatchOptions{},
				Requests: []nlconntest.Request{ipvsReq(cmdDelDaemon, tc.stopErr), fence(nlconntest.Errno(unix.EOPNOTSUPP))},
			})
			err := c.StopDaemon(context.Background(), Backup)
			if tc.wantIs == nil {
				if err != nil {
					t.Fatalf("StopDaemon = %v; the fence's EOPNOTSUPP must not count", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, tc.wantIs) || errors.Is(err, unix.EOPNOTSUPP) ||
				e.Op != "stop" || e.Object != "backup sync daemon" {
				t.Fatalf("StopDaemon = %v; want an *Error on stop backup sync daemon wrapping %v, not the fence's EOPNOTSUPP", err, tc.wantIs)
			}
		})
	}
}

func TestStopDaemonInvalidStateSendsNothing(t *testing.T) {
	c, s := scriptedClient(t)
	var ve *ValidationError
	if err := c.StopDaemon(context.Background(), DaemonState(7)); !errors.As(err, &ve) || ve.Field != "state" {
		t.Fatalf("StopDaemon(7) = %v, want a *ValidationError on state", err)
	}
	if len(s.Seen()) != 1 {
		t.Errorf("%d requests sent after the family lookup, want none", len(s.Seen())-1)
	}
}

// A service the kernel's dump repeats (it resumes by position in a table all
// namespaces share, so another namespace's new service can shift it) is
// listed once: a namespace cannot hold two services of one key.
func TestServicesDropsARepeatedService(t *testing.T) {
	a := Service{Family: IPv4, Protocol: TCP, Addr: netip.MustParseAddr("198.18.100.1"), Port: 80, Scheduler: "rr"}
	b := Service{Family: IPv4, Protocol: TCP, Addr: netip.MustParseAddr("198.18.100.2"), Port: 80, Scheduler: "wrr"}
	reply := func(s Service) netlink.Message {
		return netlink.Message{Header: netlink.Header{Type: testFamily}, Data: serviceRequest(cmdNewService, s, true)}
	}
	req := ipvsReq(cmdGetService, nil)
	req.Replies = []netlink.Message{reply(a), reply(b), reply(b)}
	c, _ := scriptedClient(t, nlconntest.Call{Op: nlconntest.Execute, Requests: []nlconntest.Request{req}})
	got, err := c.Services(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Key() != a.Key() || got[1].Key() != b.Key() {
		t.Fatalf("Services = %v; want %v and %v once each", got, a.Key(), b.Key())
	}
}

// A service dump too large for one part is read again while a reading brings
// a service the earlier ones lacked: the kernel resumes such a dump by
// position in a table every namespace shares, so another namespace's
// deletions between two parts make it skip services of ours.
func TestServicesReadsALargeDumpAgain(t *testing.T) {
	var all []Service
	for i := range 80 {
		all = append(all, Service{Family: IPv4, Protocol: TCP, Addr: netip.AddrFrom4([4]byte{198, 18, 100, byte(i + 1)}), Port: 80, Scheduler: "rr"})
	}
	dump := func(skip ...int) nlconntest.Call {
		req := ipvsReq(cmdGetService, nil)
		for i, s := range all {
			if !slices.Contains(skip, i) {
				req.Replies = append(req.Replies, netlink.Message{Header: netlink.Header{Type: testFamily}, Data: serviceRequest(cmdNewService, s, true)})
			}
		}
		return nlconntest.Call{Op: nlconntest.Execute, Requests: []nlconntest.Request{req}}
	}
	for _, tc := range []struct {
		name    string
		calls   []nlconntest.Call
		missing int // the service every reading skipped, or -1
	}{
		{"complete at once", []nlconntest.Call{dump(), dump()}, -1},
		{"first readings skip", []nlconntest.Call{dump(5, 6, 30), dump(30), dump(), dump()}, -1},
		{"skips recovered one by one", []nlconntest.Call{dump(1, 2, 3), dump(2, 3), dump(3), dump()}, -1},
		{"at most four readings", []nlconntest.Call{dump(1, 2, 3, 4), dump(2, 3, 4), dump(3, 4), dump(4)}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s := scriptedClient(t, tc.calls...)
			got, err := c.Services(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var keys []ServiceKey
			for _, si := range got {
				keys = append(keys, si.Key())
			}
			slices.SortFunc(keys, func(a, b ServiceKey) int { return a.Addr.Compare(b.Addr) })
			var want []ServiceKey
			for i, s := range all {
				if i != tc.missing {
					want = append(want, s.Key())
				}
			}
			if !slices.Equal(keys, want) {
				t.Errorf("Services = %v\nwant %v", keys, want)
			}
			if n := len(s.Seen()) - 1; n != len(tc.calls) {
				t.Errorf("%d dumps, want %d", n, len(tc.calls))
			}
		})
	}
}
