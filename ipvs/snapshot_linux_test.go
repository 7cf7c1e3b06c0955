package ipvs

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// snapTable is a table for Snapshot's integration tests: services
// 198.18.<base>.<i>:80/tcp, each with dests masq destinations in 198.19/16.
type snapTable struct {
	base     byte
	services int
	dests    int
}

func (tb snapTable) service(i int) Service {
	return Service{Family: IPv4, Protocol: TCP, Addr: netip.AddrFrom4([4]byte{198, 18, tb.base + byte(i>>8), byte(i)}), Port: 80, Scheduler: "rr"}
}

func (tb snapTable) dest(i, j int) Destination {
	k := i*tb.dests + j
	return Destination{Family: IPv4, Addr: netip.AddrFrom4([4]byte{198, 19, tb.base + byte(k>>8), byte(k)}), Port: 8080, Forward: Masq, Weight: uint32(j + 1)}
}

func (tb snapTable) add(b *Batch, i int) {
	b.AddService(tb.service(i))
	for j := 0; j < tb.dests; j++ {
		b.AddDestination(tb.service(i).Key(), tb.dest(i, j))
	}
}

func (tb snapTable) create(t *testing.T, c *Client) {
	t.Helper()
	var b Batch
	for i := 0; i < tb.services; i++ {
		tb.add(&b, i)
	}
	if err := c.Apply(t.Context(), &b); err != nil {
		t.Fatalf("creating %d services: %v", tb.services, err)
	}
}

// dumpEachRunning counts goroutines running nlconn's DumpEach workers.
func dumpEachRunning() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "nlconn.(*Conn).DumpEach.func")
}

// Snapshot is exactly what Services and then Destinations of each service
// return, in the same order, and leaves no goroutine behind.
func TestIntegrationSnapshotMatchesOneByOne(t *testing.T) {
	c, _ := newTestClient(t)
	ctx := t.Context()
	tb := snapTable{base: 0, services: 300, dests: 4}
	tb.create(t, c)
	var b Batch // one service without destinations, one IPv6
	b.AddService(Service{Family: IPv4, Protocol: UDP, Addr: netip.MustParseAddr("198.18.200.1"), Port: 53, Scheduler: "wlc"})
	v6 := Service{Family: IPv6, Protocol: TCP, Addr: netip.MustParseAddr("2001:db8::1"), Port: 443, Scheduler: "rr"}
	b.AddService(v6)
	b.AddDestination(v6.Key(), Destination{Addr: netip.MustParseAddr("2001:db8::2"), Port: 8443, Forward: Masq, Weight: 3})
	if err := c.Apply(ctx, &b); err != nil {
		t.Fatal(err)
	}

	snap, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	svcs, err := c.Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want Snapshot
	for _, s := range svcs {
		ds, err := c.Destinations(ctx, s.Key())
		if err != nil {
			t.Fatal(err)
		}
		want.Services = append(want.Services, ServiceSnapshot{ServiceInfo: s, Destinations: ds})
	}
	if len(snap.Services) != tb.services+2 {
		t.Fatalf("Snapshot has %d services, want %d", len(snap.Services), tb.services+2)
	}
	if !reflect.DeepEqual(snap, want) {
		for i := range min(len(snap.Services), len(want.Services)) {
			if !reflect.DeepEqual(snap.Services[i], want.Services[i]) {
				t.Fatalf("service %d of the Snapshot:\n got %+v\nwant %+v", i, snap.Services[i], want.Services[i])
			}
		}
		t.Fatalf("Snapshot differs from Services + Destinations")
	}
	if n := dumpEachRunning(); n != 0 {
		t.Errorf("%d dump goroutines still running after Snapshot returned", n)
	}
}

// While other namespaces change their services (which shifts the kernel's
// table under the service dump: it resumes by position in a table every
// namespace shares) and this namespace's extra services change, every
// Snapshot lists each service at most once, each stable one with exactly
// its destinations and each extra one with some of its own (it may have
// been deleted, or not yet filled, between the two dumps). With additions
// only, every stable service is listed. Deletions elsewhere can make the
// kernel's service dump skip services of ours (positions shift back between
// two parts of the dump); Services reads it again while that finds more, but
// deletions that never stop can make every reading skip one, so there
// completeness is not checked.
func TestIntegrationSnapshotConcurrentChanges(t *testing.T) {
	for _, deletes := range []bool{false, true} {
		name := "additions"
		if deletes {
			name = "deletions"
		}
		t.Run(name, func(t *testing.T) { testSnapshotConcurrentChanges(t, deletes) })
	}
}

func testSnapshotConcurrentChanges(t *testing.T, deletes bool) {
	c, _ := newTestClient(t)
	other, _ := newTestClient(t)
	stable := snapTable{base: 0, services: 200, dests: 3}
	extra := snapTable{base: 100, services: 40, dests: 2}
	elsewhere := snapTable{base: 50, services: 100, dests: 1}
	stable.create(t, c)
	extra.create(t, c)
	elsewhere.create(t, other)

	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	apply := func(c *Client, bs ...*Batch) bool {
		for _, b := range bs {
			if err := c.Apply(ctx, b); err != nil {
				if ctx.Err() == nil {
					errs <- err
				}
				return false
			}
		}
		return true
	}
	// Every other service of tb deleted and re-created, by turns.
	recreate := func(c *Client, tb snapTable) {
		defer wg.Done()
		for round := 0; ctx.Err() == nil; round++ {
			var del, add Batch
			for i := round % 2; i < tb.services; i += 2 {
				del.DeleteService(tb.service(i).Key())
				tb.add(&add, i)
			}
			if !apply(c, &del, &add) {
				return
			}
		}
	}
	// Every other service of tb loses its destinations and gets them back.
	redest := func(c *Client, tb snapTable) {
		defer wg.Done()
		for round := 0; ctx.Err() == nil; round++ {
			var del, add Batch
			for i := round % 2; i < tb.services; i += 2 {
				for j := 0; j < tb.dests; j++ {
					del.DeleteDestination(tb.service(i).Key(), tb.dest(i, j).Key())
					add.AddDestination(tb.service(i).Key(), tb.dest(i, j))
				}
			}
			if !apply(c, &del, &add) {
				return
			}
		}
	}
	// New services, 20 at a time, up to 2,000.
	grow := func(c *Client, tb snapTable) {
		defer wg.Done()
		for next := tb.services; next < 2000 && ctx.Err() == nil; next += 20 {
			var add Batch
			for i := next; i < next+20; i++ {
				tb.add(&add, i)
			}
			if !apply(c, &add) {
				return
			}
		}
	}
	wg.Add(2)
	if deletes {
		go recreate(c, extra)
		go recreate(other, elsewhere)
	} else {
		go redest(c, extra)
		go grow(other, elsewhere)
	}

	for n := 0; n < 6; n++ {
		snap, err := c.Snapshot(t.Context())
		if err != nil {
			stop()
			wg.Wait()
			t.Fatalf("Snapshot %d: %v", n, err)
		}
		checkChurnedSnapshot(t, n, snap, stable, extra, !deletes)
	}
	stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("changing services meanwhile: %v", err)
	}
}

func checkChurnedSnapshot(t *testing.T, n int, snap Snapshot, stable, extra snapTable, complete bool) {
	t.Helper()
	want := map[ServiceKey][]Destination{}
	isExtra := map[ServiceKey]bool{}
	for _, tb := range []snapTable{stable, extra} {
		for i := 0; i < tb.services; i++ {
			k := tb.service(i).Key()
			isExtra[k] = tb == extra
			for j := 0; j < tb.dests; j++ {
				want[k] = append(want[k], tb.dest(i, j))
			}
		}
	}
	seen := map[ServiceKey]bool{}
	for _, s := range snap.Services {
		k := s.Key()
		if seen[k] {
			t.Errorf("Snapshot %d lists %v twice", n, k)
		}
		seen[k] = true
		ds, ok := want[k]
		if !ok {
			t.Errorf("Snapshot %d lists %v, which this namespace never had", n, k)
			continue
		}
		var got []Destination
		for _, d := range s.Destinations {
			got = append(got, d.Destination)
		}
		if isExtra[k] {
			for _, d := range got {
				if !slices.Contains(ds, d) {
					t.Errorf("Snapshot %d: %v has destination %+v, not one of its own", n, k, d)
				}
			}
			continue
		}
		sortDests(got)
		sortDests(ds)
		if !reflect.DeepEqual(got, ds) {
			t.Errorf("Snapshot %d: %v has destinations\n %+v\nwant\n %+v", n, k, got, ds)
		}
	}
	for i := 0; i < stable.services && complete; i++ {
		if k := stable.service(i).Key(); !seen[k] {
			t.Errorf("Snapshot %d lacks the stable service %v", n, k)
		}
	}
}

// A cancelled or expired ctx ends Snapshot with an error wrapping it; the
// Client then lists the whole table.
func TestIntegrationSnapshotContext(t *testing.T) {
	c, _ := newTestClient(t)
	tb := snapTable{base: 0, services: 500, dests: 2}
	tb.create(t, c)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Snapshot(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Snapshot with a cancelled ctx: %v", err)
	}
	// 500 dumps take far longer than a millisecond, even on hardware.
	ctx, cancel = context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	if _, err := c.Snapshot(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Snapshot with a 1 ms deadline: %v", err)
	}
	if n := dumpEachRunning(); n != 0 {
		t.Errorf("%d dump goroutines still running after Snapshot was cut short", n)
	}
	snap, err := c.Snapshot(t.Context())
	if err != nil {
		t.Fatalf("Snapshot after cut-short ones: %v", err)
	}
	checkChurnedSnapshot(t, 0, snap, tb, snapTable{}, true)
	if len(snap.Services) != tb.services {
		t.Fatalf("Snapshot after cut-short ones has %d services, want %d", len(snap.Services), tb.services)
	}
}
