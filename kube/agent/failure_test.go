package agent

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ipvskit/ipvskit/kube/internal/walk"
	"github.com/ipvskit/ipvskit/proxier/proxiertest"
)

// TestAgentSyncsWholeAfterAFailure fails an Update part way and checks
// that the next sync is whole, even with no new event, and leaves the
// fakes as a fresh agent's first sync does.
func TestAgentSyncsWholeAfterAFailure(t *testing.T) {
	w := walk.New(7)
	for range 40 {
		w.Next()
	}
	in := proxiertest.New()
	f := newFed(t, fedSetup{node: walkNode(walk.Zone), svcs: w.Services(), slices: w.Slices(), wrap: in.Wrap})
	f.sync(t)
	first := f.a.lastWhole
	var events int
	for {
		// Events until one changes the kernel, which the injector fails.
		ev := w.Next()
		if ev.Service != nil {
			f.event(kindService, ev.Service, ev.Delete)
		} else {
			f.event(kindSlice, ev.Slice, ev.Delete)
		}
		events++
		in.Reset()
		in.FailFirst(func(proxiertest.Op) bool { return true }, proxiertest.CutShort)
		f.clock.Step(1)
		err := f.a.sync(context.Background())
		if f.a.lastWhole != first {
			t.Fatalf("event %d: a whole sync before any failure", events)
		}
		if err != nil {
			break
		}
		if events > 200 {
			t.Fatal("no event in 200 changed the kernel")
		}
	}
	in.Reset()
	f.clock.Step(1)
	f.sync(t)
	if f.a.lastWhole == first {
		t.Fatal("the sync after a failure was not whole")
	}
	if _, err := f.a.p.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	fresh := newFedAgent(t, walkNode(walk.Zone), w.Services(), w.Slices())
	fresh.sync(t)
	if d := cmp.Diff(fresh.dump(), f.dump()); d != "" {
		t.Fatalf("after the repair (-fresh +fed):\n%s", d)
	}
}
