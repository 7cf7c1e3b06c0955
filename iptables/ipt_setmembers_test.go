package iptables

import (
	"context"
	"slices"
	"testing"
)

// SetMembers reads back every owned ipset's members, and changes nothing:
// after an Apply it returns what was applied (but the rule-only set),
// before anything is owned nil.
func TestIPTablesSetMembers(t *testing.T) {
	b, sets, run := newFakeIPT(t)
	ctx := context.Background()
	if got, err := b.setMembers(ctx); err != nil || got != nil {
		t.Fatalf("SetMembers of nothing owned = %v, %v; want nil, nil", got, err)
	}
	r := sample(IPv4, Options{})
	if err := b.apply(ctx, b, r, false); err != nil {
		t.Fatal(err)
	}
	run.save = savedText(r, nil)
	run.calls, sets.calls = nil, nil
	got, err := b.setMembers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Sets() {
		want := r.Members(s)
		if !s.isIPSet() {
			want = nil
		}
		if g := got.Members(s); !slices.Equal(g, want) {
			t.Errorf("set %v: %v, want %v", s, g, want)
		}
	}
	for _, c := range append(slices.Clone(run.calls), sets.calls...) {
		if c != "iptables-nft-save" && c[:5] != "list " {
			t.Errorf("SetMembers wrote: %s", c)
		}
	}
}
