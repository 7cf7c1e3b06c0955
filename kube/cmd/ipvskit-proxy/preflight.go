package main

import (
	"context"
	"fmt"

	"github.com/vishvananda/netns"

	"github.com/ipvskit/ipvskit/kube/agent"
	"github.com/ipvskit/ipvskit/proxier"
)

// preflight probes the node's kernel for every module pc and the node's
// default scheduler need (proxier.Preflight), before anything is changed,
// so that a node without them fails at start with each missing module named
// rather than at the first sync with the first one. Probing asks the kernel
// for the features, so a kernel that loads modules on demand loads them.
// Per-Service schedulers (ipvskit.io/scheduler) are not known yet; a missing
// one is named by the sync that needs it.
// ns is the namespace (0: this thread's, the node's for the agent).
func preflight(ctx context.Context, pc *proxier.Config, cfg *agent.Config, ns netns.NsHandle) error {
	sched := cfg.Scheduler
	if sched == "" {
		sched = "rr"
	}
	if err := proxier.Preflight(ctx, pc, ns, &proxier.PreflightOptions{Schedulers: []string{sched}}); err != nil {
		return fmt.Errorf("kernel preflight (load the modules named on the node, e.g. in /etc/modules-load.d, or run with --preflight=false): %w", err)
	}
	return nil
}
