package nlconntest

import (
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/ipvskit/ipvskit/internal/nlconn"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *recorder) Helper()               {}
func (r *recorder) Error(args ...any)     { r.errs = append(r.errs, "error") }
func (r *recorder) Errorf(string, ...any) { r.errs = append(r.errs, "errorf") }
func (r *recorder) Cleanup(f func())      { r.cleanups = append(r.cleanups, f) }
func (r *recorder) end() {
	for _, f := range r.cleanups {
		f()
	}
}

func genl(cmd uint8) netlink.Message { return netlink.Message{Data: []byte{cmd, 1, 0, 0}} }

func TestScriptAnswersInOrder(t *testing.T) {
	ctx := context.Background()
	reply := netlink.Message{Data: []byte{9, 1, 0, 0}}
	s := New(t,
		Call{Op: Execute, Requests: []Request{{Check: GenlCommand(1), Replies: []netlink.Message{reply}}}},
		Call{Op: Batch, Options: &nlconn.BatchOptions{StopOnError: true}, Requests: []Request{
			{Check: GenlCommand(2)}, {Check: GenlCommand(3), Err: Errno(unix.EEXIST)},
		}},
		Call{Op: Dump, Requests: []Request{{Replies: []netlink.Message{reply, reply}}}},
	)
	got, err := s.Execute(ctx, genl(1))
	if err != nil || len(got) != 1 || got[0].Data[0] != 9 {
		t.Fatalf("Execute = %v, %v; want the scripted reply", got, err)
	}
	errs, err := s.Batch(ctx, []netlink.Message{genl(2), genl(3)}, nlconn.BatchOptions{StopOnError: true})
	if err != nil || errs[0] != nil || !errors.Is(errs[1], fs.ErrExist) {
		t.Fatalf("Batch = %v, %v; want [nil, EEXIST]", errs, err)
	}
	n := 0
	if err := s.Dump(ctx, genl(4), func(netlink.Header, []byte) error { n++; return nil }); err != nil || n != 2 {
		t.Fatalf("Dump = %v after %d messages, want 2", err, n)
	}
	if len(s.Seen()) != 4 {
		t.Errorf("Seen %d requests, want 4", len(s.Seen()))
	}
}

func TestScriptFailsOnSurprises(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func(s *Script) error
	}{
		{"wrong method", func(s *Script) error { return s.Dump(ctx, genl(1), nil) }},
		{"wrong command", func(s *Script) error { _, err := s.Execute(ctx, genl(2)); return err }},
		{"wrong count", func(s *Script) error {
			_, err := s.Batch(ctx, []netlink.Message{genl(1), genl(1)}, nlconn.BatchOptions{})
			return err
		}},
		{"never called", func(s *Script) error { return errors.New("nothing sent") }},
	} {
		r := &recorder{TB: t}
		s := New(r, Call{Op: Execute, Requests: []Request{{Check: GenlCommand(1)}}})
		if err := tc.call(s); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
		r.end()
		if len(r.errs) == 0 {
			t.Errorf("%s: the test was not failed", tc.name)
		}
	}
}

func TestScriptClosed(t *testing.T) {
	s := New(t)
	s.Close()
	if _, err := s.Execute(context.Background(), genl(1)); !errors.Is(err, nlconn.ErrClosed) || !s.Closed() {
		t.Errorf("Execute after Close = %v, want ErrClosed", err)
	}
}
