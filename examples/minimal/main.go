// Command minimal is the smallest useful ipvskit program, a starting point
// for a node agent: it reads a proxier.State from a JSON or YAML file (the
// form docs/state-format.md describes; examples/states has one per kind of
// service), makes the current network namespace serve it, and prints what
// it did (the plan, any warnings, and the kernel's IPVS table as ipvsadm -Ln
// shows it). Run it as root on a kernel with IPVS. With -cleanup it removes everything it owns instead.
// With -dry-run it only validates the State and prints the plan, as any
// user on any machine: no root, no IPVS (dryrun.go).
//
//	minimal state.json
//	minimal -dry-run state.json                 # print the plan from an empty node, change nothing
//	minimal -dry-run -node saved.txt state.json # from the IPVS table ipvsadm -Sn saved
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
	dryRunFlag := flag.Bool("dry-run", false, "print the plan without applying it")
	cleanup := flag.Bool("cleanup", false, "remove everything ipvskit owns")
	dualStack := flag.Bool("dual-stack", false, "serve IPv6 as well as IPv4")
	flag.Parse()
	cfg := configFor(*dualStack)
	checkAndExit(cfg, flag.Arg(0)) // -check: see check.go
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	if *dryRunFlag && !*cleanup {
		err = dryRun(ctx, os.Stdout, cfg, flag.Arg(0), *nodeFlag) // no kernel: dryrun.go
	} else {
		err = run(ctx, cfg, flag.Arg(0), *cleanup)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "minimal:", err)
		os.Exit(1)
	}
}

// configFor is minimal's Config: the zero Config (nftables, IPv4), with
// IPv6 too if dualStack.
func configFor(dualStack bool) *proxier.Config {
	if dualStack {
		return &proxier.Config{Families: []proxier.Family{proxier.IPv4, proxier.IPv6}}
	}
	return &proxier.Config{}
}

func run(ctx context.Context, cfg *proxier.Config, path string, cleanup bool) error {
	p, err := proxier.Open(ctx, cfg, 0) // 0: this namespace
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
