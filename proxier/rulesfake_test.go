package proxier

import (
	"context"

	"github.com/ipvskit/ipvskit/iptables"
)

// The rest of iptables.Interface (Rules) for fakeRules (proxier_test.go),
// which the Proxier never calls or calls only to count.

// ApplyFull is Apply: the fake keeps no difference to send.
func (f *fakeRules) ApplyFull(ctx context.Context, r *iptables.Ruleset) error {
	return f.Apply(ctx, r)
}

// LastStats says one rule write per Apply and nothing of sets, which is
// what the Proxier counted for a back end that reports nothing.
func (f *fakeRules) LastStats() iptables.ApplyStats { return iptables.ApplyStats{RuleWrites: 1} }

// Close has nothing to release.
func (f *fakeRules) Close() error { return nil }
