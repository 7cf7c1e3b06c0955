package proxiertest

import (
	"context"

	"github.com/ipvskit/ipvskit/iptables"
)

// The rest of iptables.Interface for recRules (injector_test.go), which the
// Proxier does not call in these tests.

func (r *recRules) ApplyFull(ctx context.Context, rs *iptables.Ruleset) error {
	return r.Apply(ctx, rs)
}
func (r *recRules) LastStats() iptables.ApplyStats { return iptables.ApplyStats{} }
func (r *recRules) Close() error                   { return nil }
