package nlconn

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

var getAddrs = netlink.Message{
	Header: netlink.Header{Type: unix.RTM_GETADDR},
	Data:   []byte{unix.AF_INET, 0, 0, 0, 0, 0, 0, 0},
}

// addrOf returns the IFA_LOCAL of an RTM_NEWADDR message.
func addrOf(t *testing.T, data []byte) netip.Addr {
	t.Helper()
	ad, err := netlink.NewAttributeDecoder(data[8:])
	if err != nil {
		t.Fatal(err)
	}
	for ad.Next() {
		if ad.Type() == unix.IFA_LOCAL {
			a, _ := netip.AddrFromSlice(ad.Bytes())
			return a
		}
	}
	t.Fatalf("no IFA_LOCAL in %x", data)
	return netip.Addr{}
}

// TestIntegrationDumpStreams dumps more addresses than fit in one receive
// (the kernel splits the dump into many messages over many datagrams) and
// sees each exactly once; a callback error stops the calls, and the socket
// is still usable afterwards.
func TestIntegrationDumpStreams(t *testing.T) {
	c, _ := dialNS(t)
	ctx := context.Background()
	const n = 2000
	msgs := make([]netlink.Message, n)
	for i := range msgs {
		msgs[i] = addrMsg(testAddr(i+1), 32)
	}
	if errs, err := c.Batch(ctx, msgs, BatchOptions{}); err != nil || errors.Join(errs...) != nil {
		t.Fatalf("adding %d addresses: %v %v", n, err, errors.Join(errs...))
	}
	seen := map[netip.Addr]int{}
	err := c.Dump(ctx, getAddrs, func(h netlink.Header, data []byte) error {
		if h.Type != unix.RTM_NEWADDR {
			t.Errorf("message type %d in an address dump", h.Type)
		}
		seen[addrOf(t, data)]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != n+1 { // and 127.0.0.1
		t.Errorf("dump saw %d addresses, want %d", len(seen), n+1)
	}
	for a, k := range seen {
		if k != 1 {
			t.Errorf("%v seen %d times", a, k)
		}
	}

	stop := errors.New("enough")
	calls := 0
	err = c.Dump(ctx, getAddrs, func(netlink.Header, []byte) error {
		calls++
		if calls == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 10 {
		t.Fatalf("callback failing at call 10: err %v after %d calls", err, calls)
	}
	// The rest of that dump was drained: the next request gets its own
	// answer.
	if _, err := c.Execute(ctx, addrMsg(testAddr(1), 32)); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("request after a stopped dump: %v, want EEXIST", err)
	}
}

func TestIntegrationDumpContext(t *testing.T) {
	c, _ := dialNS(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := c.Dump(ctx, getAddrs, func(netlink.Header, []byte) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("dump with a canceled context: %v", err)
	}
	if err := c.Dump(context.Background(), getAddrs, func(netlink.Header, []byte) error { return nil }); err != nil {
		t.Fatalf("dump after: %v", err)
	}
}
