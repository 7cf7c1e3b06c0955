package nlconn

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// These tests drive NETLINK_ROUTE, which every Linux kernel has, in a fresh
// namespace: RTM_NEWADDR on lo (index 1 in a new namespace) succeeds once per
// address and fails with EEXIST (NLM_F_EXCL) the second time; a prefix length
// over 32 fails with EINVAL and an extended-ack message.

func dialNS(t *testing.T) (*Conn, *testutil.NetNS) {
	t.Helper()
	ns := testutil.NewNetNS(t)
	c, err := Dial(unix.NETLINK_ROUTE, &Config{NetNS: int(ns.Handle())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ns
}

func addrMsg(a netip.Addr, prefixLen uint8) netlink.Message {
	var b []byte
	b = append(b, unix.AF_INET, prefixLen, 0, unix.RT_SCOPE_HOST)
	b = binary.NativeEndian.AppendUint32(b, 1) // lo
	ae := netlink.NewAttributeEncoder()
	ae.Bytes(unix.IFA_LOCAL, a.AsSlice())
	ae.Bytes(unix.IFA_ADDRESS, a.AsSlice())
	attrs, _ := ae.Encode()
	return netlink.Message{
		Header: netlink.Header{Type: unix.RTM_NEWADDR, Flags: netlink.Create | netlink.Excl},
		Data:   append(b, attrs...),
	}
}

func testAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)})
}

// loAddrs lists the 198.18/15 addresses on lo, as ip(8) sees them.
func loAddrs(t *testing.T, ns *testutil.NetNS) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for _, f := range strings.Fields(ns.Exec(t, "ip", "-4", "-o", "addr", "show", "dev", "lo")) {
		if strings.HasPrefix(f, "198.18.") {
			got[strings.TrimSuffix(f, "/32")] = true
		}
	}
	return got
}

func TestIntegrationExecuteErrors(t *testing.T) {
	c, ns := dialNS(t)
	ctx := context.Background()
	if _, err := c.Execute(ctx, addrMsg(testAddr(1), 32)); err != nil {
		t.Fatalf("first add: %v", err)
	}
	_, err := c.Execute(ctx, addrMsg(testAddr(1), 32))
	var ke *Error
	if !errors.Is(err, fs.ErrExist) || !errors.Is(err, unix.EEXIST) || !errors.As(err, &ke) {
		t.Fatalf("second add: err = %v, want *Error wrapping EEXIST", err)
	}
	if _, err = c.Execute(ctx, addrMsg(testAddr(2), 33)); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("prefix length 33: err = %v, want EINVAL", err)
	}
	// An attribute of the wrong size fails the kernel's policy check, which
	// says so in an extended ack pointing at the attribute: offset 24 is
	// nlmsghdr (16) + ifaddrmsg (8).
	bad := addrMsg(testAddr(3), 32)
	bad.Data = append(bad.Data[:8:8], 6, 0, unix.IFA_LOCAL, 0, 198, 18, 0, 0)
	_, err = c.Execute(ctx, bad)
	// (EINVAL or ERANGE, depending on the kernel version.)
	if !errors.As(err, &ke) || (ke.Errno != unix.EINVAL && ke.Errno != unix.ERANGE) || ke.Message == "" || ke.Offset != 24 {
		t.Fatalf("2-byte IFA_LOCAL: err = %#v, want EINVAL or ERANGE with an extended-ack message at offset 24", err)
	}
	if got := loAddrs(t, ns); len(got) != 1 || !got["198.18.0.1"] {
		t.Fatalf("ip addr shows %v, want only 198.18.0.1", got)
	}

	// A dump returns every address, merged from its parts.
	msgs, err := c.Execute(ctx, netlink.Message{
		Header: netlink.Header{Type: unix.RTM_GETADDR, Flags: netlink.Dump},
		Data:   []byte{unix.AF_INET, 0, 0, 0, 0, 0, 0, 0},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 { // 127.0.0.1 and 198.18.0.1
		t.Fatalf("dump returned %d messages, want 2", len(msgs))
	}
}

func TestIntegrationBatchMapsErrorsToRequests(t *testing.T) {
	c, ns := dialNS(t)
	ctx := context.Background()
	// 3000 requests over several sends (MaxMessages 256): every third is a
	// duplicate of the one before it (EEXIST), every 7th has a bad prefix
	// length (EINVAL).
	var msgs []netlink.Message
	want := map[int]error{}
	wantAddrs := map[string]bool{}
	lastAdded := testAddr(0)
	for i := 0; len(msgs) < 3000; i++ {
		switch {
		case len(msgs)%7 == 6:
			want[len(msgs)] = unix.EINVAL
			msgs = append(msgs, addrMsg(testAddr(i), 40))
		case len(msgs)%3 == 2 && i > 0:
			want[len(msgs)] = unix.EEXIST
			msgs = append(msgs, addrMsg(lastAdded, 32))
		default:
			lastAdded = testAddr(i)
			wantAddrs[lastAdded.String()] = true
			msgs = append(msgs, addrMsg(lastAdded, 32))
		}
	}
	errs, err := c.Batch(ctx, msgs, BatchOptions{MaxMessages: 256})
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) != len(msgs) {
		t.Fatalf("%d errors for %d requests", len(errs), len(msgs))
	}
	for i, e := range errs {
		if w := want[i]; (w == nil) != (e == nil) || (w != nil && !errors.Is(e, w)) {
			t.Errorf("request %d: err = %v, want %v", i, e, w)
		}
	}
	got := loAddrs(t, ns)
	if len(got) != len(wantAddrs) {
		t.Fatalf("ip addr shows %d test addresses, want %d", len(got), len(wantAddrs))
	}
	for a := range wantAddrs {
		if !got[a] {
			t.Fatalf("%s missing from ip addr", a)
		}
	}
}

func TestIntegrationBatchEveryRequestFails(t *testing.T) {
	c, _ := dialNS(t)
	rcv, _, err := c.Buffers()
	if err != nil {
		t.Fatal(err)
	}
	// More requests than one send carries, every one failing with an
	// extended-ack message: each must come back, none lost to ENOBUFS.
	n := 3*DefaultBatchMessages + 5
	msgs := make([]netlink.Message, n)
	for i := range msgs {
		msgs[i] = addrMsg(testAddr(i), 99)
	}
	errs, err := c.Batch(context.Background(), msgs, BatchOptions{})
	if err != nil {
		t.Fatalf("batch (rcvbuf %d): %v", rcv, err)
	}
	for i, e := range errs {
		var ke *Error
		if !errors.As(e, &ke) || ke.Errno != unix.EINVAL {
			t.Fatalf("request %d: err = %v, want EINVAL", i, e)
		}
	}
}

func TestIntegrationBatchSmallReceiveBuffer(t *testing.T) {
	// With a receive buffer too small for 1024 errors, Batch sends fewer
	// requests at a time instead of losing errors.
	ns := testutil.NewNetNS(t)
	c, err := Dial(unix.NETLINK_ROUTE, &Config{NetNS: int(ns.Handle()), BufferSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msgs := make([]netlink.Message, 2000)
	for i := range msgs {
		msgs[i] = addrMsg(testAddr(i), 99)
	}
	errs, err := c.Batch(context.Background(), msgs, BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if !errors.Is(e, unix.EINVAL) {
			t.Fatalf("request %d: err = %v, want EINVAL", i, e)
		}
	}
}

func TestIntegrationBatchStopOnError(t *testing.T) {
	c, ns := dialNS(t)
	msgs := []netlink.Message{addrMsg(testAddr(1), 32), addrMsg(testAddr(1), 32), addrMsg(testAddr(2), 32), addrMsg(testAddr(3), 32)}
	errs, err := c.Batch(context.Background(), msgs, BatchOptions{MaxMessages: 2, StopOnError: true})
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || !errors.Is(errs[1], fs.ErrExist) || !errors.Is(errs[2], ErrNotSent) || !errors.Is(errs[3], ErrNotSent) {
		t.Fatalf("errs = %v, want [nil EEXIST not-sent not-sent]", errs)
	}
	if got := loAddrs(t, ns); len(got) != 1 {
		t.Fatalf("ip addr shows %v, want only 198.18.0.1", got)
	}
}

func TestIntegrationContextReplacesSocket(t *testing.T) {
	c, _ := dialNS(t)
	before := c.s

	// Cancelled while blocked in a receive that nothing will answer.
	ctx, cancel := context.WithCancel(context.Background())
	err := c.do(ctx, "test", func(s *sock) error {
		cancel() // the call is under way: this must unblock the receive
		_, err := s.recv()
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if c.s == nil || c.s == before {
		t.Fatal("the socket was not replaced after a cancelled call")
	}

	// A deadline that fires while blocked.
	before = c.s
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err = c.do(ctx, "test", func(s *sock) error { _, err := s.recv(); return err })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if c.s == before {
		t.Fatal("the socket was not replaced after a deadline")
	}

	// The replacement is in the same namespace and works.
	if _, err := c.Execute(context.Background(), addrMsg(testAddr(1), 32)); err != nil {
		t.Fatal(err)
	}
	// A context already done never touches the socket.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := c.Execute(ctx, addrMsg(testAddr(2), 32)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestIntegrationDialDuplicatesNamespace(t *testing.T) {
	ns := testutil.NewNetNS(t)
	h, err := unix.Dup(int(ns.Handle()))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Dial(unix.NETLINK_ROUTE, &Config{NetNS: h})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	unix.Close(h) // the caller may close its handle
	c.mu.Lock()
	c.s.nc.Close()
	c.s = nil // force a re-dial
	c.mu.Unlock()
	if _, err := c.Execute(context.Background(), addrMsg(testAddr(9), 32)); err != nil {
		t.Fatal(err)
	}
	if got := loAddrs(t, ns); !got["198.18.0.9"] {
		t.Fatalf("re-dialled socket wrote elsewhere: ip addr in the namespace shows %v", got)
	}
	c.Close()
	if _, err := c.Execute(context.Background(), addrMsg(testAddr(9), 32)); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: err = %v, want ErrClosed", err)
	}
}

func TestIntegrationConcurrentUse(t *testing.T) {
	c, ns := dialNS(t)
	const workers, per = 8, 50
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			ctx := context.Background()
			var batch []netlink.Message
			for i := range per {
				a := testAddr(w*1000 + i)
				if i%2 == 0 {
					if _, err := c.Execute(ctx, addrMsg(a, 32)); err != nil {
						errc <- fmt.Errorf("worker %d add %v: %w", w, a, err)
						return
					}
				} else {
					batch = append(batch, addrMsg(a, 32), addrMsg(a, 32))
				}
				if i%10 == 0 {
					if _, err := c.Execute(ctx, netlink.Message{
						Header: netlink.Header{Type: unix.RTM_GETADDR, Flags: netlink.Dump},
						Data:   []byte{unix.AF_INET, 0, 0, 0, 0, 0, 0, 0},
					}); err != nil {
						errc <- err
						return
					}
				}
			}
			errs, err := c.Batch(ctx, batch, BatchOptions{MaxMessages: 7})
			if err != nil {
				errc <- err
				return
			}
			for i, e := range errs {
				if (i%2 == 0) != (e == nil) {
					errc <- fmt.Errorf("worker %d batch request %d: %v", w, i, e)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if got := loAddrs(t, ns); len(got) != workers*per {
		t.Fatalf("ip addr shows %d addresses, want %d", len(got), workers*per)
	}
}

func TestIntegrationLostRepliesAreReported(t *testing.T) {
	// Bypass Batch's bound: 600 failing requests in one send to a socket
	// whose receive buffer holds far fewer errors. The overrun must surface
	// as ErrRepliesLost (ENOBUFS), never as success.
	ns := testutil.NewNetNS(t)
	c, err := Dial(unix.NETLINK_ROUTE, &Config{NetNS: int(ns.Handle()), BufferSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b []byte
	for i := range 600 {
		m := addrMsg(testAddr(i), 99)
		b = appendMessage(b, m.Header.Type, m.Header.Flags|netlink.Request, uint32(i+1), 0, m.Data)
	}
	setAck(b[len(b)-wireSize(addrMsg(testAddr(0), 99).Data):])
	errs := make([]error, 600)
	err = c.do(context.Background(), "test", func(s *sock) error {
		_, err := s.sendAndCollect(b, 1, 600, errs)
		return err
	})
	if !errors.Is(err, ErrRepliesLost) || !errors.Is(err, unix.ENOBUFS) {
		t.Fatalf("err = %v, want ErrRepliesLost wrapping ENOBUFS", err)
	}
}
