package main

// minimal -dry-run state.yaml validates the State and prints the plan the
// first Sync on an empty node would apply, changing nothing. It needs no
// root and no kernel feature: the Proxier syncs the fakes of
// proxiertest.NewFakeDeps, which stand for the node and check each request
// as the kernel would, so it runs on a laptop or in CI. With -node
// table.txt (the output of `ipvsadm -Sn` on a node) the node starts with
// that IPVS table: another program's virtual servers are left alone, and
// a VIP:port of the State one of them holds is a conflict, as on the node.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/proxier/proxiertest"
)

var nodeFlag = flag.String("node", "", "with -dry-run: plan from the IPVS table of this `file` (ipvsadm -Sn output) rather than an empty node")

// dryRun prints to w the plan of the State in path, with cfg (nil: the
// zero Config, as run uses), from an empty node or, if nodePath is set,
// from the IPVS table it holds.
func dryRun(ctx context.Context, w io.Writer, cfg *proxier.Config, path, nodePath string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	state, err := proxier.DecodeValidState(data, cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fakes := proxiertest.NewFakeDeps(cfg)
	if nodePath != "" {
		table, err := os.ReadFile(nodePath)
		if err != nil {
			return err
		}
		if err := fakes.LoadIPVS(ctx, table); err != nil {
			return fmt.Errorf("%s: %w", nodePath, err)
		}
	}
	p, err := proxier.New(cfg, fakes.Deps())
	if err != nil {
		return err
	}
	// Sync, not Plan: Plan plans against what the Proxier last applied
	// (nothing yet) and reads nothing back; a Sync of the fakes reads the
	// node's table back first, as the first Sync on the node would.
	res, err := p.Sync(ctx, state)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(w, res.Plan)
	return err
}
