// Package contract holds the expectations that conntrack.Client (against a
// kernel's table) and conntracktest.Fake (in memory) must both meet, so
// that the fake keeps the real thing's semantics and errors.
package contract

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/conntrack"
)

// Deleter is the method both implementations share.
type Deleter interface {
	Delete(ctx context.Context, filters ...conntrack.Filter) (int, error)
}

// World is one fresh, empty conntrack table with an implementation
// working on it, and ways for a test to put flows there as traffic would
// and to read the table back without the implementation.
type World struct {
	Deleter Deleter
	// Insert puts flows into the table (conntrack -I for the kernel).
	Insert func(t *testing.T, flows ...conntrack.Flow)
	// Oracle returns the table, sorted by Flow.String (conntrack -L for
	// the kernel).
	Oracle func(t *testing.T) []conntrack.Flow
}

// Run runs every expectation as a subtest, each in a world from newWorld
// that starts with the table below.
func Run(t *testing.T, newWorld func(t *testing.T) World) {
	for _, tc := range []struct {
		name string
		f    func(t *testing.T, w World)
	}{
		{"DeleteRemovesWhatMatchesAndNothingElse", deletes},
		{"InvalidFiltersDeleteNothing", invalid},
		{"NoFiltersDeleteNothing", none},
		{"CanceledContextDeletesNothing", canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.Insert(t, table...)
			want(t, w, table)
			tc.f(t, w)
		})
	}
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func flow(p conntrack.Protocol, client, vip, backend string) conntrack.Flow {
	c := ap(client)
	return conntrack.Flow{Protocol: p, Original: conntrack.Tuple{Src: c, Dst: ap(vip)}, Reply: conntrack.Tuple{Src: ap(backend), Dst: c}}
}

// The table: flows through one VIP per family to backends A and B, and
// another program's flows (its own VIP, a plain connection to the node)
// that no filter below may touch. Each has its own client port: the kernel
// refuses two flows with one reply tuple.
var (
	toA    = flow(conntrack.UDP, "198.18.20.2:41001", "198.18.100.1:53", "198.18.11.2:5353")
	toB    = flow(conntrack.UDP, "198.18.20.2:41002", "198.18.100.1:53", "198.18.12.2:5353")
	tcpToA = flow(conntrack.TCP, "198.18.20.2:41003", "198.18.100.1:53", "198.18.11.2:5353")
	toA6   = flow(conntrack.UDP, "[2001:db8:20::2]:41001", "[2001:db8:100::1]:53", "[2001:db8:11::2]:5353")
	toB6   = flow(conntrack.UDP, "[2001:db8:20::2]:41002", "[2001:db8:100::1]:53", "[2001:db8:12::2]:5353")
	theirs = []conntrack.Flow{
		flow(conntrack.UDP, "198.18.20.2:41004", "198.18.101.1:53", "198.18.11.2:5353"),
		flow(conntrack.TCP, "198.18.20.3:41005", "198.18.20.1:22", "198.18.20.1:22"),
		flow(conntrack.UDP, "[2001:db8:20::3]:41006", "[2001:db8:101::1]:53", "[2001:db8:11::2]:5353"),
	}
	table = append([]conntrack.Flow{toA, toB, tcpToA, toA6, toB6}, theirs...)
)

func deletes(t *testing.T, w World) {
	ctx := context.Background()
	keepB := []conntrack.Filter{
		{Protocol: conntrack.UDP, Addr: toA.Original.Dst.Addr(), Port: 53, Keep: []netip.AddrPort{toB.Reply.Src}},
		{Protocol: conntrack.UDP, Addr: toA6.Original.Dst.Addr(), Port: 53, Keep: []netip.AddrPort{toB6.Reply.Src}},
	}
	n, err := w.Deleter.Delete(ctx, keepB...)
	if err != nil || n != 2 {
		t.Fatalf("Delete of backend A's UDP flows, both families = %d, %v; want 2, nil", n, err)
	}
	left := []conntrack.Flow{toB, tcpToA, toB6}
	want(t, w, append(left, theirs...))
	if n, err := w.Deleter.Delete(ctx, keepB...); err != nil || n != 0 {
		t.Fatalf("the same Delete again = %d, %v; want 0, nil", n, err)
	}
	// A filter without an address covers every address of both families,
	// the other program's flows to port 53 included: the caller's choice.
	// One of a protocol no flow has matches nothing.
	n, err = w.Deleter.Delete(ctx,
		conntrack.Filter{Protocol: conntrack.UDP, Port: 53},
		conntrack.Filter{Protocol: conntrack.SCTP, Addr: toA.Original.Dst.Addr()})
	if err != nil || n != 4 {
		t.Fatalf("Delete of every UDP flow to port 53 = %d, %v; want 4, nil", n, err)
	}
	want(t, w, []conntrack.Flow{tcpToA, theirs[1]})
}

func invalid(t *testing.T, w World) {
	good := conntrack.Filter{Protocol: conntrack.UDP, Addr: toA.Original.Dst.Addr()}
	for _, tc := range []struct {
		bad   conntrack.Filter
		field string
	}{
		{conntrack.Filter{Addr: toA.Original.Dst.Addr()}, "filters[1].Protocol"},
		{conntrack.Filter{Protocol: conntrack.UDP, Addr: toA.Original.Dst.Addr(), Keep: []netip.AddrPort{toB6.Reply.Src}}, "filters[1].Keep[0]"},
		{conntrack.Filter{Protocol: conntrack.UDP, Addr: netip.MustParseAddr("::ffff:198.18.100.1")}, "filters[1].Addr"},
	} {
		n, err := w.Deleter.Delete(context.Background(), good, tc.bad)
		var ve *conntrack.ValidationError
		if n != 0 || !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("Delete with a bad filter = %d, %v; want 0 and a *ValidationError for %s", n, err, tc.field)
		}
	}
	want(t, w, table)
}

func none(t *testing.T, w World) {
	if n, err := w.Deleter.Delete(context.Background()); n != 0 || err != nil {
		t.Errorf("Delete without filters = %d, %v; want 0, nil", n, err)
	}
	want(t, w, table)
}

func canceled(t *testing.T, w World) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n, err := w.Deleter.Delete(ctx, conntrack.Filter{Protocol: conntrack.UDP, Addr: toA.Original.Dst.Addr()})
	var ce *conntrack.Error
	if n != 0 || !errors.Is(err, context.Canceled) || !errors.As(err, &ce) {
		t.Errorf("Delete with a canceled context = %d, %v; want 0 and a *conntrack.Error matching context.Canceled", n, err)
	}
	want(t, w, table)
}

// want fails t unless the oracle shows exactly flows.
func want(t *testing.T, w World, flows []conntrack.Flow) {
	t.Helper()
	wantS := make([]string, len(flows))
	for i, f := range flows {
		wantS[i] = f.String()
	}
	slices.Sort(wantS)
	var gotS []string
	for _, f := range w.Oracle(t) {
		gotS = append(gotS, f.String())
	}
	if !slices.Equal(gotS, wantS) {
		t.Fatalf("table:\n%s\nwant:\n%s", strings.Join(gotS, "\n"), strings.Join(wantS, "\n"))
	}
}
