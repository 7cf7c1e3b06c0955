// Command minimal is the smallest useful ipvskit program, a starting point
// for a node agent: it reads a proxier.State from a JSON or YAML file (the
// form docs/state-format.md describes; examples/states has one per kind of
// service), makes the current network namespace serve it, and prints what
// it did (the plan, any warnings, and the kernel's IPVS table as ipvsadm -Ln
// shows it). Run it as root on a kernel with IPVS. With -cleanup it removes everything it owns instead.
//
//	minimal state.json
//	minimal -dry-run state.json   # print the plan, change nothing
//	minimal -cleanup
//
// state.json, for example:
//
//	{"services": {"default/web": {
//	  "clusterIPs": ["198.18.100.1"],
//	  "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080}],
//	  "endpoints": [{"addr": "198.18.1.1", "ready": true}, {"addr": "198.18.1.2", "ready": true}]}}}
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvsadm"
	"github.com/ipvskit/ipvskit/proxier"
)

func main() {
	dryRun := flag.Bool("dry-run", false, "print the plan without applying it")
	cleanup := flag.Bool("cleanup", false, "remove everything ipvskit owns")
	flag.Parse()
	checkAndExit(flag.Arg(0)) // -check: see check.go
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, flag.Arg(0), *dryRun, *cleanup); err != nil {
		fmt.Fprintln(os.Stderr, "minimal:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, path string, dryRun, cleanup bool) error {
	// This namespace (0), nftables, IPv4: the zero Config.
	p, err := proxier.Open(ctx, nil, 0)
	if err != nil {
		return err
	}
	defer p.Close()
	if cleanup {
		return p.Cleanup(ctx)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	state, err := proxier.DecodeState(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if dryRun {
		plan, err := p.Plan(state)
		if err != nil {
			return err
		}
		fmt.Print(plan)
		return nil
	}
	res, err := p.Sync(ctx, state)
	if err != nil {
		return err
	}
	fmt.Print(res.Plan)
	for _, w := range res.Warnings {
		fmt.Fprintln(os.Stderr, "minimal: warning:", w)
	}
	return printTable(ctx)
}

// printTable prints the IPVS table of this namespace, as ipvsadm -Ln does.
func printTable(ctx context.Context) error {
	c, err := ipvs.New(nil)
	if err != nil {
		return err
	}
	defer c.Close()
	info, err := c.Info(ctx)
	if err != nil {
		return err
	}
	snap, err := c.Snapshot(ctx)
	if err != nil {
		return err
	}
	return ipvsadm.WriteTable(os.Stdout, snap, ipvsadm.TableOptions{Info: &info})
}
