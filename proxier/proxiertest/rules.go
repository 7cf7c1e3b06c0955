package proxiertest

import (
	"context"
	"fmt"

	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/proxier"
)

// rulesDep counts and fails the calls of one family's proxier.Rules. An
// Apply is one operation: what a back end does inside it (ipset updates,
// iptables-restore, an nftables transaction) is its own affair.
type rulesDep struct {
	in   *Injector
	fam  proxier.Family
	next proxier.Rules
}

func (w *rulesDep) Apply(ctx context.Context, r *iptables.Ruleset) error {
	return w.in.single(proxier.SubsystemRules, w.fam, "Rules.Apply", fmt.Sprintf("apply the %v ruleset", w.fam),
		func() error { return w.next.Apply(ctx, r) }, same)
}

func (w *rulesDep) Cleanup(ctx context.Context) error {
	return w.in.single(proxier.SubsystemRules, w.fam, "Rules.Cleanup", fmt.Sprintf("clean up the %v rules", w.fam),
		func() error { return w.next.Cleanup(ctx) }, same)
}

// ApplyFull is Apply writing everything: one operation, as Apply is.
func (w *rulesDep) ApplyFull(ctx context.Context, r *iptables.Ruleset) error {
	return w.in.single(proxier.SubsystemRules, w.fam, "Rules.ApplyFull", fmt.Sprintf("apply the whole %v ruleset", w.fam),
		func() error { return w.next.ApplyFull(ctx, r) }, same)
}

// LastStats reports one rule write per Apply and nothing of sets: the
// Injector sees an Apply as one operation, not what the back end sent
// inside it (which, after an injected failure, it did not send at all).
func (w *rulesDep) LastStats() iptables.ApplyStats { return iptables.ApplyStats{RuleWrites: 1} }

// Close does nothing: Wrap's clients are closed by their owner.
func (w *rulesDep) Close() error { return nil }

// Render only renders text: not an operation.
func (w *rulesDep) Render(r *iptables.Ruleset) (string, error) { return w.next.Render(r) }

// Check reads the owned objects (Reconcile): one operation.
func (w *rulesDep) Check(ctx context.Context) ([]iptables.ObjectDrift, error) {
	var drift []iptables.ObjectDrift
	err := w.in.single(proxier.SubsystemRules, w.fam, "Rules.Check", fmt.Sprintf("check the %v rules", w.fam),
		func() error {
			var err error
			drift, err = w.next.Check(ctx)
			return err
		}, same)
	return drift, err
}

// Repair rewrites the owned objects (Reconcile): one operation.
func (w *rulesDep) Repair(ctx context.Context) error {
	return w.in.single(proxier.SubsystemRules, w.fam, "Rules.Repair", fmt.Sprintf("repair the %v rules", w.fam),
		func() error { return w.next.Repair(ctx) }, same)
}

// Owned reads the ownership ledger (Sync's start, Cleanup): one operation.
func (w *rulesDep) Owned(ctx context.Context) (*iptables.Ruleset, error) {
	var r *iptables.Ruleset
	err := w.in.single(proxier.SubsystemRules, w.fam, "Rules.Owned", fmt.Sprintf("read the %v ownership ledger", w.fam),
		func() error {
			var err error
			r, err = w.next.Owned(ctx)
			return err
		}, same)
	return r, err
}
