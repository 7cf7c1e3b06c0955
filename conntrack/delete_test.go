package conntrack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"syscall"
	"testing"

	"github.com/mdlayher/netlink"

	"github.com/ipvskit/ipvskit/internal/nlconn"
	"github.com/ipvskit/ipvskit/internal/nlconn/nlconntest"
)

// scripted is a ctnetlink socket that dumps a fixed table per family and
// answers deletes as told, recording what it was sent.
type scripted struct {
	t     *testing.T
	table map[Family][]Flow
	// answer returns the kernel's answer to deleting fl (nil: deleted).
	answer  func(fl Flow) error
	dumps   []Family
	deletes []Tuple
	closed  bool
}

func (s *scripted) Dump(ctx context.Context, m netlink.Message, fn func(netlink.Header, []byte) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fam := Family(m.Data[0])
	s.dumps = append(s.dumps, fam)
	for i, fl := range s.table[fam] {
		if err := fn(netlink.Header{}, encodeEntry(s.t, fl, uint32(i+1), 0)); err != nil {
			return err
		}
	}
	return nil
}

func (s *scripted) Batch(ctx context.Context, msgs []netlink.Message, _ nlconn.BatchOptions) ([]error, error) {
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		tp, err := decodeEntryTuplesOnly(m.Data)
		if err != nil {
			s.t.Fatalf("delete request %x: %v", m.Data, err)
		}
		s.deletes = append(s.deletes, tp)
		if s.answer != nil {
			for _, fl := range s.table[Family(m.Data[0])] {
				if fl.Original == tp {
					errs[i] = s.answer(fl)
				}
			}
		}
	}
	return errs, nil
}

func (s *scripted) Execute(context.Context, netlink.Message) ([]netlink.Message, error) {
	s.t.Error("scripted: the conntrack client sent a single request; it only dumps and batches")
	return nil, errors.New("scripted: no single requests")
}

func (s *scripted) DumpEach(context.Context, []netlink.Message, int, func(int, int, netlink.Header, []byte) error) (int, error) {
	s.t.Error("scripted: the conntrack client ran many dumps; it runs one at a time")
	return -1, errors.New("scripted: no DumpEach")
}

func (s *scripted) Buffers() (int, int, error) {
	return nlconn.DefaultBufferSize, nlconn.DefaultBufferSize, nil
}

func (s *scripted) Close() error { s.closed = true; return nil }

func vip(a string) Filter {
	return Filter{Protocol: UDP, Addr: addr(a), Port: 53}
}

var table = map[Family][]Flow{
	IPv4: {
		flow(UDP, "198.18.20.2:1", "198.18.100.1:53", "198.18.11.2:5353"),
		flow(UDP, "198.18.20.2:2", "198.18.100.1:53", "198.18.12.2:5353"),
		flow(UDP, "198.18.20.2:3", "198.18.100.2:53", "198.18.11.2:5353"),
	},
	IPv6: {
		flow(UDP, "[2001:db8:20::2]:1", "[2001:db8:100::1]:53", "[2001:db8:11::2]:5353"),
	},
}

func TestDeleteDumpsOnlyTheFamiliesInvolved(t *testing.T) {
	for _, tc := range []struct {
		name    string
		filters []Filter
		dumps   []Family
		deleted int
	}{
		{"no filters", nil, nil, 0},
		{"IPv4", []Filter{vip("198.18.100.1")}, []Family{IPv4}, 2},
		{"IPv6", []Filter{vip("2001:db8:100::1")}, []Family{IPv6}, 1},
		{"both, one dump each", []Filter{vip("2001:db8:100::1"), vip("198.18.100.2"), vip("198.18.100.1")}, []Family{IPv4, IPv6}, 4},
		{"no address: both", []Filter{{Protocol: UDP, Port: 53}}, []Family{IPv4, IPv6}, 4},
		{"keep", []Filter{{Protocol: UDP, Addr: addr("198.18.100.1"), Keep: []netip.AddrPort{ap("198.18.12.2:5353")}}}, []Family{IPv4}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scripted{t: t, table: table}
			c := &client{conn: s}
			n, err := c.delete(context.Background(), tc.filters)
			if err != nil || n != tc.deleted {
				t.Fatalf("delete = %d, %v; want %d", n, err, tc.deleted)
			}
			if fmt.Sprint(s.dumps) != fmt.Sprint(tc.dumps) {
				t.Errorf("dumped %v, want %v", s.dumps, tc.dumps)
			}
			if len(s.deletes) != tc.deleted {
				t.Errorf("sent %d deletes, want %d", len(s.deletes), tc.deleted)
			}
		})
	}
}

func TestDeleteInvalidFilterSendsNothing(t *testing.T) {
	s := &scripted{t: t, table: table}
	c := &client{conn: s}
	_, err := c.delete(context.Background(), []Filter{vip("198.18.100.1"), {Addr: addr("198.18.100.1")}})
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "filters[1].Protocol" || ve.Value != "0" {
		t.Fatalf("err = %v, want a *ValidationError on filters[1].Protocol", err)
	}
	if len(s.dumps) != 0 || len(s.deletes) != 0 {
		t.Errorf("an invalid filter still dumped %v and deleted %v", s.dumps, s.deletes)
	}
}

func TestDeleteCountsAndErrors(t *testing.T) {
	gone := table[IPv4][0]
	refused := table[IPv4][1]
	s := &scripted{t: t, table: table, answer: func(fl Flow) error {
		switch fl {
		case gone:
			return &nlconn.Error{Errno: syscall.ENOENT}
		case refused:
			return &nlconn.Error{Errno: syscall.EPERM}
		}
		return nil
	}}
	c := &client{conn: s}
	n, err := c.delete(context.Background(), []Filter{{Protocol: UDP}})
	// Of three IPv4 flows one is gone (not counted, not an error), one
	// refused; the IPv6 family is not tried after the failure.
	var ce *Error
	if !errors.As(err, &ce) || ce.Op != "delete" || ce.Family != IPv4 || ce.Flow != refused || ce.Failed != 1 ||
		!errors.Is(err, fs.ErrPermission) {
		t.Fatalf("err = %#v, want an *Error naming the refused flow, matching fs.ErrPermission", err)
	}
	if n != 1 {
		t.Errorf("deleted %d, want 1", n)
	}
	if fmt.Sprint(s.dumps) != "[IPv4]" {
		t.Errorf("dumped %v after a failed family, want only IPv4", s.dumps)
	}
}

func TestDeleteWithoutCTNetlink(t *testing.T) {
	// nfnetlink answers EINVAL for a subsystem it does not have. One dump,
	// of the IPv4 table, and nothing after it.
	s := nlconntest.New(t, nlconntest.Call{Op: nlconntest.Dump, Requests: []nlconntest.Request{{
		Check: func(m netlink.Message) error {
			if len(m.Data) == 0 || Family(m.Data[0]) != IPv4 {
				return fmt.Errorf("dump request %x is not for the IPv4 table", m.Data)
			}
			return nil
		},
		Err: nlconntest.Errno(syscall.EINVAL),
	}}})
	c := &client{conn: s}
	_, err := c.delete(context.Background(), []Filter{vip("198.18.100.1")})
	var ce *Error
	if !errors.Is(err, ErrNotSupported) || !errors.As(err, &ce) || ce.Op != "dump" || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("err = %v, want an *Error of the dump wrapping ErrNotSupported and EINVAL", err)
	}
}

func TestDeleteContextAndClose(t *testing.T) {
	s := &scripted{t: t, table: table}
	c := &client{conn: s}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.delete(ctx, []Filter{vip("198.18.100.1")}); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled context: %v", err)
	}
	if err := c.close(); err != nil || !s.closed {
		t.Fatalf("close: %v", err)
	}
	if err := c.close(); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
	if _, err := c.delete(context.Background(), []Filter{vip("198.18.100.1")}); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("delete after close: %v", err)
	}
	if len(s.deletes) != 0 {
		t.Errorf("deleted %v", s.deletes)
	}
	// Closed under a call: the socket's own error matches fs.ErrClosed too.
	if err := closedCause(nlconn.ErrClosed); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("closedCause = %v", err)
	}
}
