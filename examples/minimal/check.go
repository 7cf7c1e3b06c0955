package main

// minimal -check [state.json] asks the kernel, changing nothing, for every
// feature minimal would use (IPVS and the schedulers state.json names,
// dummy links, nftables and its expressions, the sysctls of the profile),
// prints each missing one with the module that provides it, and exits 1
// if any is missing:
//
//	# minimal -check state.json
//	missing: IPVS scheduler sh (module ip_vs_sh)
//	missing: dummy links (module dummy)
//	minimal: 2 kernel feature(s) missing: load the modules named and check again

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/ipvskit/ipvskit/proxier"
)

var checkFlag = flag.Bool("check", false, "check that the kernel has every feature needed, change nothing, and exit (1 if one is missing)")

// checkAndExit runs the preflight check of cfg and exits, if -check was
// given.
func checkAndExit(cfg *proxier.Config, statePath string) {
	if !*checkFlag {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	missing, err := runCheck(ctx, cfg, statePath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "minimal:", err)
		os.Exit(1)
	}
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "minimal: %d kernel feature(s) missing: load the modules named and check again\n", len(missing))
		os.Exit(1)
	}
	fmt.Println("ok: the kernel has every feature minimal needs")
	os.Exit(0)
}

// runCheck prints each problem Preflight finds and returns the modules
// missing; err is for a check that could not run.
func runCheck(ctx context.Context, cfg *proxier.Config, statePath string) (missing []string, err error) {
	opts := &proxier.PreflightOptions{NoConntrack: true} // as main: no Deps.Conntrack
	if statePath != "" {
		if opts.Schedulers, err = schedulersIn(statePath); err != nil {
			return nil, err
		}
	}
	perr := proxier.Preflight(ctx, cfg, 0, opts)
	var invalid *proxier.ValidationError
	if errors.As(perr, &invalid) {
		return nil, perr
	}
	var problems []error
	if j, ok := perr.(interface{ Unwrap() []error }); ok {
		problems = j.Unwrap()
	} else if perr != nil {
		problems = []error{perr}
	}
	for _, p := range problems {
		var u *proxier.UnsupportedFeatureError
		if errors.As(p, &u) {
			fmt.Printf("missing: %s (module %s)\n", u.Feature, u.Module)
			missing = append(missing, u.Module)
			continue
		}
		fmt.Printf("error: %v\n", p)
		missing = append(missing, "")
	}
	return missing, nil
}

// schedulersIn returns the schedulers the state's services use; rr for
// those that name none.
func schedulersIn(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	state, err := proxier.DecodeState(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []string
	for _, svc := range state.Services {
		s := svc.Scheduler
		if s == "" {
			s = "rr"
		}
		out = append(out, s)
	}
	return out, nil
}
