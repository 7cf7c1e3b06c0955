package ipset

import (
	"context"
	"errors"
	"io/fs"
	"syscall"
	"testing"

	"github.com/ipvskit/ipvskit/internal/nlconn"
	"github.com/ipvskit/ipvskit/internal/nlconn/nlconntest"
	"github.com/mdlayher/netlink"
)

// scripted is a transport that answers from a function and records every
// request's command, for tests of the client's logic without a kernel.
type scripted struct {
	answer  func(cmd uint8, m netlink.Message) ([]netlink.Message, error)
	cmds    []uint8
	batches [][]netlink.Message
}

func (s *scripted) Execute(ctx context.Context, m netlink.Message) ([]netlink.Message, error) {
	cmd := uint8(m.Header.Type)
	s.cmds = append(s.cmds, cmd)
	return s.answer(cmd, m)
}

func (s *scripted) Batch(ctx context.Context, msgs []netlink.Message, opt nlconn.BatchOptions) ([]error, error) {
	s.batches = append(s.batches, msgs)
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		_, errs[i] = s.Execute(ctx, m)
	}
	return errs, nil
}

func (s *scripted) Dump(context.Context, netlink.Message, func(netlink.Header, []byte) error) error {
	return errors.New("scripted: the ipset client does not stream dumps")
}

func (s *scripted) DumpEach(context.Context, []netlink.Message, int, func(int, int, netlink.Header, []byte) error) (int, error) {
	return -1, errors.New("scripted: the ipset client does not run many dumps")
}

func (s *scripted) Buffers() (int, int, error) { return 8 << 20, 8 << 20, nil }
func (s *scripted) Close() error               { return nil }

func kernelErr(code int) error { return nlconntest.Errno(syscall.Errno(code)) }

// headerReply is a LIST reply for a hash:ip,port set named name.
func headerReply(name string) []netlink.Message {
	w := newWriter([]byte{2, 0, 0, 0})
	w.Uint8(attrProtocol, 7)
	w.String(attrSetName, name)
	w.String(attrTypeName, "hash:ip,port")
	w.Uint8(attrFamily, nfprotoIPv4)
	w.Uint8(attrRevision, 7)
	return []netlink.Message{{Data: w.Bytes()}}
}

func typeReply7() []netlink.Message {
	w := newWriter([]byte{2, 0, 0, 0})
	w.Uint8(attrRevision, 7)
	return []netlink.Message{{Data: w.Bytes()}}
}

func replaceScript(swapErrs []int, addErr int) *scripted {
	s := &scripted{}
	s.answer = func(cmd uint8, m netlink.Message) ([]netlink.Message, error) {
		switch cmd {
		case cmdList:
			return headerReply("live"), nil
		case cmdType:
			return typeReply7(), nil
		case cmdSwap:
			if len(swapErrs) > 0 {
				code := swapErrs[0]
				swapErrs = swapErrs[1:]
				return nil, kernelErr(code)
			}
		case cmdAdd:
			if addErr != 0 {
				return nil, kernelErr(addErr)
			}
		}
		return nil, nil
	}
	return s
}

func entriesN(n int) []Entry {
	out := make([]Entry, n)
	for i := range out {
		out[i] = Entry{IP: netipAddr("198.18.0.1").Next(), Proto: TCP, Port: uint16(i)}
	}
	return out
}

func TestReplaceRetriesBusySwap(t *testing.T) {
	s := replaceScript([]int{int(syscall.EBUSY), int(syscall.EBUSY)}, 0)
	c := &client{t: s, proto: 7, revs: map[revKey]uint8{}}
	if err := c.replace(context.Background(), &Set{Name: "live", Type: HashIPPort}, entriesN(1000)); err != nil {
		t.Fatal(err)
	}
	// list, type, create, adds..., swap x3, destroy; nothing touches live
	// but the swap.
	var swaps, destroys int
	for _, cmd := range s.cmds {
		switch cmd {
		case cmdSwap:
			swaps++
		case cmdDestroy:
			destroys++
		case cmdFlush, cmdDel, cmdRename:
			t.Errorf("Replace sent command %d", cmd)
		}
	}
	if swaps != 3 || destroys != 1 {
		t.Errorf("swaps %d, destroys %d; want 3 (two EBUSY) and 1", swaps, destroys)
	}
	// 1000 entries go as several packed messages in one batch.
	if len(s.batches) != 1 || len(s.batches[0]) < 2 || len(s.batches[0]) > 10 {
		t.Errorf("add batches: %d, first of %d messages; want 1 batch of a few packed messages", len(s.batches), len(s.batches[0]))
	}
}

func TestReplaceCleansUpOnFailure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		swap    []int
		add     int
		wantErr error
	}{
		{"swap keeps failing", []int{16, 16, 16, 16, 16, 16, 16, 16, 16, 16}, 0, ErrInUse},
		{"swap type mismatch", []int{codeTypeMismatch}, 0, ErrTypeMismatch},
		{"fill fails", nil, codeTypeSpecific, ErrSetFull},
	} {
		s := replaceScript(tc.swap, tc.add)
		c := &client{t: s, proto: 7, revs: map[revKey]uint8{}}
		err := c.replace(context.Background(), &Set{Name: "live", Type: HashIPPort}, entriesN(10))
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.wantErr)
		}
		if last := s.cmds[len(s.cmds)-1]; last != cmdDestroy {
			t.Errorf("%s: last command %d, want the temporary set's destroy", tc.name, last)
		}
	}
}

func TestInitClientNegotiates(t *testing.T) {
	reply := func(max, min uint8) []netlink.Message {
		w := newWriter([]byte{2, 0, 0, 0})
		w.Uint8(attrProtocol, max)
		if min != 0 {
			w.Uint8(attrProtocolMin, min)
		}
		return []netlink.Message{{Data: w.Bytes()}}
	}
	for _, tc := range []struct {
		name      string
		msgs      []netlink.Message
		err       error
		wantProto uint8
		wantErr   error
	}{
		{"protocol 7 kernel", reply(7, 6), nil, 7, nil},
		{"protocol 6 kernel", reply(6, 0), nil, 6, nil},
		{"a future kernel", reply(9, 6), nil, 7, nil},
		{"a kernel past us", reply(9, 8), nil, 0, ErrNotSupported},
		{"no ipset subsystem", nil, kernelErr(int(syscall.EINVAL)), 0, ErrNotSupported},
		{"not privileged", nil, kernelErr(int(syscall.EPERM)), 0, fs.ErrPermission},
	} {
		s := nlconntest.New(t, nlconntest.Call{Op: nlconntest.Execute, Requests: []nlconntest.Request{{
			Check:   nlconntest.HeaderType(protocolRequest().Header.Type),
			Replies: tc.msgs,
			Err:     tc.err,
		}}})
		c, err := initClient(context.Background(), s)
		switch {
		case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
			t.Errorf("%s: %v, want %v", tc.name, err, tc.wantErr)
		case tc.wantErr == nil && (err != nil || c.proto != tc.wantProto):
			t.Errorf("%s: %+v, %v; want protocol %d", tc.name, c, err, tc.wantProto)
		}
		if errors.Is(tc.wantErr, fs.ErrPermission) && errors.Is(err, ErrNotSupported) {
			t.Errorf("%s: EPERM reported as not supported: %v", tc.name, err)
		}
	}
}
