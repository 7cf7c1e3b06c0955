package conntrack_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"slices"
	"sync"
	"testing"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/conntrack/conntracktest"
	"github.com/ipvskit/ipvskit/internal/testutil"
)

// The table every case starts from: flows to two VIPs of each family, UDP,
// TCP and SCTP, answered by backend A (198.18.11.2, 2001:db8:11::2) or B
// (.12.2, ::12:2), and a node port (30053) on a node address, each from its
// own client port (the kernel refuses a second flow with the same reply
// tuple, as it would refuse the NAT that made one). The flows in zone 7 are
// listed separately (the Fake knows no zones).
var (
	udpA      = flow(conntrack.UDP, "198.18.20.2:40001", "198.18.100.1:53", "198.18.11.2:5353")
	udpB      = flow(conntrack.UDP, "198.18.20.2:40002", "198.18.100.1:53", "198.18.12.2:5353")
	udpBPort  = flow(conntrack.UDP, "198.18.20.2:40003", "198.18.100.1:53", "198.18.12.2:9999")
	udpOther  = flow(conntrack.UDP, "198.18.20.2:40004", "198.18.100.2:53", "198.18.11.2:5353")
	udpPort54 = flow(conntrack.UDP, "198.18.20.2:40005", "198.18.100.1:54", "198.18.11.2:5353")
	tcpA      = flow(conntrack.TCP, "198.18.20.2:40001", "198.18.100.1:53", "198.18.11.2:5353")
	sctpA     = flow(conntrack.SCTP, "198.18.20.2:40001", "198.18.100.1:53", "198.18.11.2:5353")
	sctpB     = flow(conntrack.SCTP, "198.18.20.2:40002", "198.18.100.1:80", "198.18.12.2:80")
	nodePortA = flow(conntrack.UDP, "198.18.20.2:40006", "198.18.20.1:30053", "198.18.11.2:5353")
	udpA6     = flow(conntrack.UDP, "[2001:db8:20::2]:40001", "[2001:db8:100::1]:53", "[2001:db8:11::2]:5353")
	udpB6     = flow(conntrack.UDP, "[2001:db8:20::2]:40002", "[2001:db8:100::1]:53", "[2001:db8:12::2]:5353")
	tcpA6     = flow(conntrack.TCP, "[2001:db8:20::2]:40001", "[2001:db8:100::1]:53", "[2001:db8:11::2]:5353")
	nodePort6 = flow(conntrack.UDP, "[2001:db8:20::2]:40006", "[2001:db8:20::1]:30053", "[2001:db8:11::2]:5353")
	zoneA     = flow(conntrack.UDP, "198.18.20.3:40001", "198.18.100.1:53", "198.18.11.2:5353")

	defaultZone = []conntrack.Flow{udpA, udpB, udpBPort, udpOther, udpPort54, tcpA, sctpA, sctpB, nodePortA, udpA6, udpB6, tcpA6, nodePort6}
	zone7       = []conntrack.Flow{zoneA}
)

// TestIntegrationDelete deletes with each case's filters from a fresh
// namespace's table and from a Fake holding the same flows: both must
// delete exactly the flows the case names, and conntrack -L must show the
// rest.
func TestIntegrationDelete(t *testing.T) {
	keepB := func(vip, b string) conntrack.Filter {
		return conntrack.Filter{Protocol: conntrack.UDP, Addr: addr(vip), Port: 53, Keep: []netip.AddrPort{ap(b)}}
	}
	for _, tc := range []struct {
		name    string
		filters []conntrack.Filter
		deleted []conntrack.Flow
	}{
		{"a backend gone, both families", []conntrack.Filter{keepB("198.18.100.1", "198.18.12.2:5353"), keepB("2001:db8:100::1", "[2001:db8:12::2]:5353")},
			[]conntrack.Flow{udpA, udpBPort, udpA6, zoneA}},
		{"no backend left", []conntrack.Filter{{Protocol: conntrack.UDP, Addr: addr("198.18.100.1"), Port: 53}},
			[]conntrack.Flow{udpA, udpB, udpBPort, zoneA}},
		{"keep an address on any port", []conntrack.Filter{{Protocol: conntrack.UDP, Addr: addr("198.18.100.1"), Port: 53, Keep: []netip.AddrPort{ap("198.18.12.2:0")}}},
			[]conntrack.Flow{udpA, zoneA}},
		{"SCTP, every port of a VIP", []conntrack.Filter{{Protocol: conntrack.SCTP, Addr: addr("198.18.100.1")}},
			[]conntrack.Flow{sctpA, sctpB}},
		{"a node port on any address, both families", []conntrack.Filter{{Protocol: conntrack.UDP, Port: 30053}},
			[]conntrack.Flow{nodePortA, nodePort6}},
		{"TCP, IPv6 only", []conntrack.Filter{{Protocol: conntrack.TCP, Addr: addr("2001:db8:100::1")}},
			[]conntrack.Flow{tcpA6}},
		{"nothing matches", []conntrack.Filter{{Protocol: conntrack.UDP, Addr: addr("198.18.199.1")}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := testutil.NewNetNS(t)
			c := newClient(t, ns)
			insert(t, ns, 0, defaultZone...)
			insert(t, ns, 7, zone7...)
			all := append(slices.Clone(defaultZone), zone7...)
			diffFlows(t, "conntrack -L before", list(t, ns), all)

			n, err := c.Delete(context.Background(), tc.filters...)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(tc.deleted) {
				t.Errorf("deleted %d, want %d", n, len(tc.deleted))
			}
			want := slices.DeleteFunc(slices.Clone(all), func(f conntrack.Flow) bool { return slices.Contains(tc.deleted, f) })
			diffFlows(t, "conntrack -L after", list(t, ns), want)

			fake := conntracktest.New()
			if err := fake.Add(all...); err != nil {
				t.Fatal(err)
			}
			fn, err := fake.Delete(context.Background(), tc.filters...)
			if err != nil || fn != n {
				t.Errorf("the Fake deleted %d (%v), the kernel %d", fn, err, n)
			}
			diffFlows(t, "the Fake's table after", fake.Flows(), want)
		})
	}
}

// TestIntegrationInvalidFiltersDeleteNothing: each bad filter, even after a
// good one, is a *ValidationError naming it, and the table is untouched.
func TestIntegrationInvalidFiltersDeleteNothing(t *testing.T) {
	ns := testutil.NewNetNS(t)
	c := newClient(t, ns)
	insert(t, ns, 0, defaultZone...)
	good := conntrack.Filter{Protocol: conntrack.UDP, Addr: addr("198.18.100.1")}
	for _, tc := range []struct {
		bad   conntrack.Filter
		field string
	}{
		{conntrack.Filter{Addr: addr("198.18.100.1")}, "filters[1].Protocol"},
		{conntrack.Filter{Protocol: 1, Addr: addr("198.18.100.1")}, "filters[1].Protocol"},
		{conntrack.Filter{Protocol: conntrack.UDP, Addr: addr("198.18.100.1"), Keep: []netip.AddrPort{ap("[2001:db8::1]:53")}}, "filters[1].Keep[0]"},
		{conntrack.Filter{Protocol: conntrack.UDP, Addr: addr("::ffff:198.18.100.1")}, "filters[1].Addr"},
		{conntrack.Filter{Protocol: conntrack.UDP, Keep: []netip.AddrPort{{}}}, "filters[1].Keep[0]"},
	} {
		n, err := c.Delete(context.Background(), good, tc.bad)
		var ve *conntrack.ValidationError
		if !errors.As(err, &ve) || ve.Field != tc.field || n != 0 {
			t.Errorf("%+v: deleted %d, err %v; want a *ValidationError on %s", tc.bad, n, err, tc.field)
		}
	}
	diffFlows(t, "conntrack -L after invalid filters", list(t, ns), defaultZone)
}

// TestIntegrationDeleteMany deletes half of 2,000 flows: the deletes span
// several sends, and every one is counted.
func TestIntegrationDeleteMany(t *testing.T) {
	ns := testutil.NewNetNS(t)
	c := newClient(t, ns)
	var flows, kept []conntrack.Flow
	for i := range 2000 {
		backend := "198.18.11.2:5353"
		if i%2 == 1 {
			backend = "198.18.12.2:5353"
		}
		f := flow(conntrack.UDP, fmt.Sprintf("198.18.%d.%d:%d", 20+i/250, 1+i%250, 10000+i), "198.18.100.1:53", backend)
		flows = append(flows, f)
		if i%2 == 1 {
			kept = append(kept, f)
		}
	}
	insert(t, ns, 0, flows...)
	n, err := c.Delete(context.Background(), conntrack.Filter{Protocol: conntrack.UDP, Addr: addr("198.18.100.1"), Port: 53,
		Keep: []netip.AddrPort{ap("198.18.12.2:5353")}})
	if err != nil || n != 1000 {
		t.Fatalf("deleted %d, %v; want 1000", n, err)
	}
	diffFlows(t, "conntrack -L after", list(t, ns), kept)
	// Again: nothing left to delete.
	if n, err := c.Delete(context.Background(), conntrack.Filter{Protocol: conntrack.UDP, Addr: addr("198.18.100.1"), Port: 53,
		Keep: []netip.AddrPort{ap("198.18.12.2:5353")}}); err != nil || n != 0 {
		t.Fatalf("second delete: %d, %v; want 0", n, err)
	}
}

// TestIntegrationConcurrentDeletes: goroutines sharing one Client each
// delete their own VIP's flows; every count is right.
func TestIntegrationConcurrentDeletes(t *testing.T) {
	ns := testutil.NewNetNS(t)
	c := newClient(t, ns)
	const vips, per = 4, 50
	var flows []conntrack.Flow
	for v := range vips {
		for i := range per {
			flows = append(flows, flow(conntrack.UDP, fmt.Sprintf("198.18.20.2:%d", 10000+per*v+i), fmt.Sprintf("198.18.100.%d:53", v+1), "198.18.11.2:5353"))
		}
	}
	insert(t, ns, 0, flows...)
	var wg sync.WaitGroup
	for v := range vips {
		wg.Go(func() {
			n, err := c.Delete(context.Background(), conntrack.Filter{Protocol: conntrack.UDP, Addr: addr(fmt.Sprintf("198.18.100.%d", v+1))})
			if err != nil || n != per {
				t.Errorf("VIP %d: deleted %d, %v; want %d", v+1, n, err, per)
			}
		})
	}
	wg.Wait()
	if got := list(t, ns); len(got) != 0 {
		t.Errorf("left over: %v", got)
	}
}

func TestIntegrationContextAndClose(t *testing.T) {
	ns := testutil.NewNetNS(t)
	c := newClient(t, ns)
	insert(t, ns, 0, udpA)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var ce *conntrack.Error
	if _, err := c.Delete(ctx, conntrack.Filter{Protocol: conntrack.UDP}); !errors.Is(err, context.Canceled) || !errors.As(err, &ce) {
		t.Errorf("canceled context: %v, want an *Error wrapping context.Canceled", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(context.Background(), conntrack.Filter{Protocol: conntrack.UDP}); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("after Close: %v, want fs.ErrClosed", err)
	}
	diffFlows(t, "conntrack -L", list(t, ns), []conntrack.Flow{udpA})
}
