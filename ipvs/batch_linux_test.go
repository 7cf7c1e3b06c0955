package ipvs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"sync"
	"testing"
	"time"
)

func svcN(i int) Service {
	return Service{Protocol: TCP, Addr: netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}), Port: 80, Scheduler: "rr"}
}

func destN(i int) Destination {
	return Destination{Addr: netip.AddrFrom4([4]byte{198, 19, byte(i >> 8), byte(i)}), Port: 8080, Weight: 1}
}

func TestIntegrationBatchFailuresInTheMiddle(t *testing.T) {
	c, ns := newTestClient(t)
	var b Batch
	wantFail := map[int]error{}
	for i := range 50 {
		b.AddService(svcN(i))
		for j := range 10 {
			b.AddDestination(svcN(i).Key(), destN(j))
		}
		switch i {
		case 10: // a duplicate service
			wantFail[b.Len()] = fs.ErrExist
			b.AddService(svcN(3))
		case 20: // a destination of a service that does not exist
			wantFail[b.Len()] = fs.ErrNotExist
			b.AddDestination(svcN(999).Key(), destN(1))
		case 30: // deleting a destination that is not there
			wantFail[b.Len()] = fs.ErrNotExist
			b.DeleteDestination(svcN(30).Key(), destN(77).Key())
		}
	}
	err := c.Apply(t.Context(), &b)
	var be *BatchError
	if !errors.As(err, &be) || be.Err != nil || be.Total != b.Len() {
		t.Fatalf("Apply: err = %v, want a *BatchError over %d requests", err, b.Len())
	}
	if len(be.Failed) != len(wantFail) {
		t.Fatalf("%d failures, want %d: %v", len(be.Failed), len(wantFail), err)
	}
	for _, f := range be.Failed {
		if w, ok := wantFail[f.Index]; !ok || !errors.Is(f.Err, w) || f.Op != b.Ops()[f.Index] {
			t.Errorf("failure at %d (%v): %v; want one of %v", f.Index, f.Op.Kind, f.Err, wantFail)
		}
	}
	if !errors.Is(err, fs.ErrExist) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the BatchError does not unwrap to its failures: %v", err)
	}
	// Everything else was applied.
	if got := len(saved(t, ns)); got != 50+500 {
		t.Fatalf("ipvsadm -Sn shows %d lines, want 550", got)
	}
}

func TestIntegrationBatchStopOnError(t *testing.T) {
	c, ns := newTestClient(t)
	b := Batch{StopOnError: true}
	for i := range 3000 {
		if i == 5 {
			b.AddService(svcN(0)) // duplicate: fails in the first send
			continue
		}
		b.AddService(svcN(i))
	}
	err := c.Apply(t.Context(), &b)
	var be *BatchError
	if !errors.As(err, &be) || len(be.Failed) < 2 || be.Failed[0].Index != 5 || !errors.Is(be.Failed[0].Err, fs.ErrExist) {
		t.Fatalf("Apply: %v; want request 5 failed with EEXIST, then unsent ones", err)
	}
	firstUnsent := be.Failed[1].Index
	for i, f := range be.Failed[1:] {
		if f.Index != firstUnsent+i || !errors.Is(f.Err, ErrNotSent) {
			t.Fatalf("failure %d at %d: %v; want ErrNotSent for every request from %d on", i+1, f.Index, f.Err, firstUnsent)
		}
	}
	if be.Failed[len(be.Failed)-1].Index != b.Len()-1 {
		t.Fatalf("the last request is not reported unsent")
	}
	// The kernel ran every request of the send that had the failure, and
	// none after it.
	if got := len(saved(t, ns)); got != firstUnsent-1 {
		t.Fatalf("ipvsadm -Sn shows %d services, want %d (requests before %d, less the failed one)", got, firstUnsent-1, firstUnsent)
	}
}

func TestIntegrationBatchRefusesInvalidRequest(t *testing.T) {
	c, ns := newTestClient(t)
	var b Batch
	b.AddService(svcN(1))
	b.AddDestination(svcN(1).Key(), Destination{Addr: mustAddr("198.19.0.1"), Port: 80, Weight: 1, LowerThreshold: 5})
	b.AddService(svcN(2))
	err := c.Apply(t.Context(), &b)
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "Destination.LowerThreshold" {
		t.Fatalf("Apply: err = %v, want a ValidationError on Destination.LowerThreshold", err)
	}
	if got := saved(t, ns); len(got) != 0 {
		t.Fatalf("an invalid batch was half applied: %q", got)
	}
}

func TestIntegrationConcurrentUse(t *testing.T) {
	c, ns := newTestClient(t)
	ctx := t.Context()
	const workers = 8
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			base := w * 100
			for i := range 5 {
				s := svcN(base + i)
				if err := c.AddService(ctx, s); err != nil {
					errc <- err
					return
				}
				if err := c.AddDestination(ctx, s.Key(), destN(base+i)); err != nil {
					errc <- err
					return
				}
				if _, err := c.Snapshot(ctx); err != nil {
					errc <- err
					return
				}
			}
			var b Batch
			for i := 5; i < 10; i++ {
				b.AddService(svcN(base + i))
				b.AddDestination(svcN(base+i).Key(), destN(base+i))
			}
			if err := c.Apply(ctx, &b); err != nil {
				errc <- fmt.Errorf("worker %d: %w", w, err)
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if got := len(saved(t, ns)); got != workers*10*2 {
		t.Fatalf("ipvsadm -Sn shows %d lines, want %d", got, workers*10*2)
	}
	svcs, err := c.Services(ctx)
	if err != nil || len(svcs) != workers*10 {
		t.Fatalf("Services: %d, %v; want %d", len(svcs), err, workers*10)
	}
}

func TestIntegrationContextDeadline(t *testing.T) {
	c, ns := newTestClient(t)
	// A deadline already past: nothing is sent.
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	if err := c.AddService(ctx, svcN(1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("past deadline: err = %v, want context.DeadlineExceeded", err)
	}
	if got := saved(t, ns); len(got) != 0 {
		t.Fatalf("a call with a past deadline reached the kernel: %q", got)
	}

	// A deadline that fires while a large batch is in flight.
	var b Batch
	for i := range 5000 {
		b.AddService(svcN(i))
		for j := range 9 {
			b.AddDestination(svcN(i).Key(), destN(j))
		}
	}
	ctx, cancel = context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := c.Apply(ctx, &b)
	var be *BatchError
	if !errors.As(err, &be) || !errors.Is(be.Err, context.DeadlineExceeded) || len(be.Failed) == 0 {
		t.Fatalf("Apply under a 50ms deadline: err = %v, want a BatchError cut short by the deadline", err)
	}
	// The client replaced its socket and works; its view matches ipvsadm's.
	svcs, err := c.Services(t.Context())
	if err != nil {
		t.Fatalf("Services after the deadline: %v", err)
	}
	n := 0
	for _, l := range saved(t, ns) {
		if len(l) > 2 && l[:2] == "-A" {
			n++
		}
	}
	if len(svcs) != n {
		t.Fatalf("client lists %d services, ipvsadm %d", len(svcs), n)
	}
}
