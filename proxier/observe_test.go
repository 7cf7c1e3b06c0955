package proxier

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/iptables"
)

func TestObserverSeesEverySyncWithItsPhasesOpsAndErrors(t *testing.T) {
	var events []*SyncEvent
	var logs bytes.Buffer
	cfg := &Config{
		Observer: ObserverFunc(func(e Event) {
			if se, ok := e.(*SyncEvent); ok {
				events = append(events, se)
			}
		}),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	r := newRig(t, cfg)
	r.sync(t, oneService())
	r.sync(t, oneService())
	r.ipvs.failNext = true
	s := oneService()
	web := s.Services["web"]
	web.Endpoints = web.Endpoints[:1]
	web.Endpoints[0].Addr = a("198.18.1.9")
	s.Services["web"] = web
	_, err := r.p.Sync(context.Background(), &s)
	var oe *OpError
	if !errors.As(err, &oe) || oe.Subsystem != SubsystemIPVS {
		t.Fatalf("err = %v, want an *OpError of ipvs", err)
	}

	if len(events) != 3 {
		t.Fatalf("%d events, want 3", len(events))
	}
	first, noop, failed := events[0], events[1], events[2]
	if first.Err != nil || first.Ops[SubsystemIPVS] != 3 || first.Ops[SubsystemAddresses] != 1 ||
		first.Ops[SubsystemRules] != 1 || first.Ops[SubsystemSysctl] == 0 || first.VirtualServers != 1 || first.VIPs != 1 {
		t.Errorf("first sync event: %+v", first)
	}
	if first.Phases.Validate <= 0 || first.Phases.Plan <= 0 || first.Duration < first.Phases.Validate+first.Phases.Plan {
		t.Errorf("first sync phases %+v, duration %v", first.Phases, first.Duration)
	}
	for s, n := range noop.Ops {
		if n != 0 {
			t.Errorf("no-op sync: %d %s ops", n, s)
		}
	}
	if failed.Err == nil || failed.ErrSubsystem != SubsystemIPVS {
		t.Errorf("failed sync event: err %v, subsystem %q", failed.Err, failed.ErrSubsystem)
	}

	out := logs.String()
	for _, want := range []string{"level=INFO msg=\"proxier: synced\"", "level=DEBUG msg=\"proxier: synced, nothing to change\"",
		"level=WARN msg=\"proxier: sync failed\"", "subsystem=ipvs"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

func TestAnInvalidStateIsObservedWithoutASubsystem(t *testing.T) {
	var got *SyncEvent
	r := newRig(t, &Config{Observer: ObserverFunc(func(e Event) { got, _ = e.(*SyncEvent) })})
	s := oneService()
	web := s.Services["web"]
	web.Ports[0].Port = 0
	s.Services["web"] = web
	if _, err := r.p.Sync(context.Background(), &s); err == nil {
		t.Fatal("invalid state accepted")
	}
	if got == nil || got.Err == nil || got.ErrSubsystem != "" {
		t.Errorf("event %+v", got)
	}
}

func TestSyncEventCountsDrainingDestinations(t *testing.T) {
	var got *SyncEvent
	r := newRig(t, &Config{Observer: ObserverFunc(func(e Event) { got, _ = e.(*SyncEvent) })})
	s := oneService()
	r.sync(t, s)
	web := s.Services["web"]
	web.Endpoints = web.Endpoints[1:] // a TCP endpoint leaves: it drains
	s.Services["web"] = web
	r.sync(t, s)
	if got == nil || got.Draining != 1 {
		t.Errorf("event %+v, want Draining 1", got)
	}
}

// statsRules is a back end that reports its work, as package iptables's do.
type statsRules struct{ *fakeRules }

func (statsRules) LastStats() iptables.ApplyStats {
	return iptables.ApplyStats{ElementsAdded: 3, ElementsDeleted: 1, RuleWrites: 2, SetsTime: time.Millisecond}
}

func TestSetsAndRulesAreCountedFromTheBackEndsStats(t *testing.T) {
	var got *SyncEvent
	r := newRig(t, nil)
	p, err := New(&Config{Observer: ObserverFunc(func(e Event) { got, _ = e.(*SyncEvent) })},
		Deps{IPVS: r.ipvs, Link: r.link, Sysctls: r.sys, Rules: map[Family]Rules{IPv4: statsRules{r.rules}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Sync(context.Background(), ptr(oneService()))
	if err != nil {
		t.Fatal(err)
	}
	if got.Ops[SubsystemSets] != 4 || got.Ops[SubsystemRules] != 2 || res.Phases.Sets != time.Millisecond {
		t.Errorf("ops %v, sets phase %v; want 4 set elements, 2 rule writes, 1ms", got.Ops, res.Phases.Sets)
	}
}
