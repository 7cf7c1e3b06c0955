package proxier

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// Syncs from many goroutines are serialised: under -race nothing races, and
// the kernel ends up holding the state of whichever Sync ran last.
func TestConcurrentSyncsAreSerialised(t *testing.T) {
	r := newRig(t, nil)
	states := make([]State, 8)
	for i := range states {
		states[i] = State{Services: map[string]Service{"web": {
			ClusterIPs: []netip.Addr{a("198.18.100.1")},
			Ports:      []Port{{Name: "http", Protocol: TCP, Port: 80}},
			Endpoints:  []Endpoint{{Addr: netip.AddrFrom4([4]byte{198, 18, 1, byte(i + 1)}), Ready: true}},
		}}}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(states))
	for i := range states {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.p.Sync(context.Background(), &states[i]); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Whichever ran last, a sync of it now plans nothing, and the fake
	// holds exactly one destination at weight 1: no interleaving left two
	// behind (the others drain, at weight 0).
	dump := r.ipvs.Dump()
	var last *State
	for i := range states {
		if want := fmt.Sprintf("-r 198.18.1.%d:80 -m -w 1\n", i+1); strings.Contains(dump, want) {
			last = &states[i]
		}
	}
	if last == nil || strings.Count(dump, "-w 1\n") != 1 {
		t.Fatalf("after concurrent syncs ipvs holds:\n%s", dump)
	}
	if pl, err := r.p.Plan(last); err != nil || !pl.Empty() {
		t.Fatalf("the proxier's memory disagrees with the kernel: plan %v, err %v", pl, err)
	}
}

// A Sync whose context is already done changes nothing, says why, and the
// next Sync converges.
func TestCanceledSyncThenConverges(t *testing.T) {
	r := newRig(t, nil)
	r.sync(t, oneService())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := oneService()
	web := s.Services["web"]
	web.Endpoints = append(web.Endpoints, Endpoint{Addr: a("198.18.1.3"), Ready: true})
	s.Services["web"] = web
	before := r.ipvs.Dump()
	if _, err := r.p.Sync(ctx, &s); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if got := r.ipvs.Dump(); got != before {
		t.Errorf("a canceled sync changed ipvs:\n%s", got)
	}
	r.sync(t, s)
	if !strings.Contains(r.ipvs.Dump(), "-r 198.18.1.3:8080") {
		t.Errorf("the next sync did not converge:\n%s", r.ipvs.Dump())
	}
}
