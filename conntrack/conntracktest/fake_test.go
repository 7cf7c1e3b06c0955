package conntracktest

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"testing"

	"github.com/ipvskit/ipvskit/conntrack"
)

func flow(p conntrack.Protocol, client, vip, backend string) conntrack.Flow {
	c := netip.MustParseAddrPort(client)
	return conntrack.Flow{Protocol: p, Original: conntrack.Tuple{Src: c, Dst: netip.MustParseAddrPort(vip)},
		Reply: conntrack.Tuple{Src: netip.MustParseAddrPort(backend), Dst: c}}
}

func TestFakeAdd(t *testing.T) {
	f := New()
	a := flow(conntrack.UDP, "198.18.20.2:1", "198.18.100.1:53", "198.18.11.2:5353")
	if err := f.Add(a, flow(conntrack.TCP, "198.18.20.2:1", "198.18.100.1:53", "198.18.11.2:5353")); err != nil {
		t.Fatal(err)
	}
	// A duplicate, even within one call, adds nothing.
	b := flow(conntrack.UDP, "198.18.20.2:2", "198.18.100.1:53", "198.18.11.2:5353")
	if err := f.Add(b, a); !errors.Is(err, fs.ErrExist) {
		t.Errorf("adding a flow again: %v, want fs.ErrExist", err)
	}
	if err := f.Add(b, b); !errors.Is(err, fs.ErrExist) {
		t.Errorf("adding a flow twice in one call: %v, want fs.ErrExist", err)
	}
	mixed := a
	mixed.Reply.Src = netip.MustParseAddrPort("[2001:db8::1]:53")
	for _, bad := range []conntrack.Flow{{}, mixed, {Protocol: conntrack.UDP}} {
		if err := f.Add(bad); err == nil {
			t.Errorf("added %v", bad)
		}
	}
	want := "tcp src=198.18.20.2 dst=198.18.100.1 sport=1 dport=53 src=198.18.11.2 dst=198.18.20.2 sport=5353 dport=1\n" +
		"udp src=198.18.20.2 dst=198.18.100.1 sport=1 dport=53 src=198.18.11.2 dst=198.18.20.2 sport=5353 dport=1\n"
	if got := f.Dump(); got != want {
		t.Errorf("Dump:\n%s\nwant\n%s", got, want)
	}
}

func TestFakeDelete(t *testing.T) {
	var f Fake // the zero value works
	ctx := context.Background()
	a := flow(conntrack.UDP, "198.18.20.2:1", "198.18.100.1:53", "198.18.11.2:5353")
	b := flow(conntrack.UDP, "198.18.20.2:2", "198.18.100.1:53", "198.18.12.2:5353")
	v6 := flow(conntrack.UDP, "[2001:db8::2]:1", "[2001:db8::1]:53", "[2001:db8::3]:5353")
	if err := f.Add(a, b, v6); err != nil {
		t.Fatal(err)
	}
	if n, err := f.Delete(ctx); n != 0 || err != nil || f.Dumps() != 0 {
		t.Fatalf("no filters: %d, %v, %d dumps", n, err, f.Dumps())
	}
	_, err := f.Delete(ctx, conntrack.Filter{Protocol: conntrack.UDP}, conntrack.Filter{})
	var ve *conntrack.ValidationError
	if !errors.As(err, &ve) || ve.Field != "filters[1].Protocol" || f.Dumps() != 0 || len(f.Flows()) != 3 {
		t.Fatalf("invalid filter: %v, %d dumps, %d flows", err, f.Dumps(), len(f.Flows()))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.Delete(cctx, conntrack.Filter{Protocol: conntrack.UDP}); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
	boom := errors.New("boom")
	f.FailDeletes(boom)
	var ce *conntrack.Error
	if n, err := f.Delete(ctx, conntrack.Filter{Protocol: conntrack.UDP, Addr: a.Original.Dst.Addr()}); n != 0 || !errors.Is(err, boom) || !errors.As(err, &ce) || len(f.Flows()) != 3 {
		t.Fatalf("failing: %d, %v, %d flows", n, err, len(f.Flows()))
	}
	f.FailDeletes(nil)
	n, err := f.Delete(ctx, conntrack.Filter{Protocol: conntrack.UDP, Addr: a.Original.Dst.Addr(), Keep: []netip.AddrPort{b.Reply.Src}})
	if n != 1 || err != nil {
		t.Fatalf("delete: %d, %v", n, err)
	}
	if got := f.Flows(); len(got) != 2 || got[0] != b && got[1] != b {
		t.Errorf("left %v", got)
	}
	// One dump for the failing call, one for this one (IPv4 only), two
	// for a filter without addresses.
	if _, err := f.Delete(ctx, conntrack.Filter{Protocol: conntrack.UDP, Port: 53}); err != nil || f.Dumps() != 4 {
		t.Errorf("dumps %d, want 4 (%v)", f.Dumps(), err)
	}
	if len(f.Flows()) != 0 {
		t.Errorf("left %v", f.Flows())
	}
}
