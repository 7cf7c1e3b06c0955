// Command ipvsbench compares ipvskit's ipvs client with github.com/moby/ipvs
// v1.1.0 on the running kernel (it needs root and IPVS: run it in the VM rig)
// and prints a table of both libraries and their ratios:
//
//	(cd bench && go build -o /tmp/ipvsbench ./cmd/ipvsbench) &&
//	go build -o /tmp/vmexec ./internal/vm/cmd/vmexec &&
//	/tmp/vmexec /tmp/ipvsbench -services 10000 -dests 10 -runs 3
//
// Phases: (a) create the services and destinations, (b) list every service
// with its destinations, (c) change one destination's weight, (d) delete
// every service (-phases picks some). Each run of each phase uses a fresh
// network namespace. The table shows the median and the best of the runs,
// and the process's user and system CPU time during the timed calls
// (medians; in the VM, system time is the guest kernel's). Netlink requests
// are counted with strace (which must be installed) in an extra, untimed
// call: phase c always, the others with -trace. With -cpuprofile, ipvskit's
// first timed call (use -phases to pick the phase) is CPU-profiled ("-" writes the profile to standard output
// and the table to standard error: the VM rig shares no writable directory).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	ipvsbench "github.com/ipvskit/ipvskit/bench/ipvs"
)

func main() {
	services := flag.Int("services", 10000, "TCP services")
	dests := flag.Int("dests", 10, "masq destinations per service")
	runs := flag.Int("runs", 3, "runs of each phase (the table shows the median and the best)")
	only := flag.String("phases", "abcd", "the `phases` to run, a subset of abcd")
	traceAll := flag.Bool("trace", false, "also count the requests of phases a, b and d with strace (slow)")
	cpuprofile := flag.String("cpuprofile", "", "CPU-profile ipvskit's first timed call into `file` (\"-\": standard output, and the table goes to standard error)")
	flag.Parse()
	t := ipvsbench.Table{Services: *services, Dests: *dests}

	libs := []struct {
		name string
		open func(*ipvsbench.NetNS) (ipvsbench.Lib, error)
	}{{"ipvskit", ipvsbench.OpenIpvskit}, {"moby/ipvs", ipvsbench.OpenMoby}}
	var phases []phase
	for _, p := range []phase{
		{"a", fmt.Sprintf("create %d services x %d dests", t.Services, t.Dests)},
		{"b", "list services + destinations"},
		{"c", "change one weight"},
		{"d", "delete all services"},
	} {
		if strings.Contains(*only, p.id) {
			phases = append(phases, p)
		}
	}
	if len(phases) == 0 {
		fail("-phases %q names no phase of abcd", *only)
	}

	var out io.Writer = os.Stdout
	var hooks ipvsbench.Hooks
	if *cpuprofile != "" {
		var pw io.Writer = os.Stdout
		if *cpuprofile == "-" {
			out = os.Stderr
		} else {
			f, err := os.Create(*cpuprofile)
			if err != nil {
				fail("%v", err)
			}
			defer f.Close()
			pw = f
		}
		// The profile covers the first timed ipvskit call only: a profile
		// cannot be paused, and moby's calls must stay out of it.
		var started, done bool
		hooks.Before = func() error {
			if done {
				return nil
			}
			started = true
			return pprof.StartCPUProfile(pw)
		}
		hooks.After = func() {
			if started && !done {
				pprof.StopCPUProfile()
				done = true
			}
		}
	}

	results := map[string][]ipvsbench.Result{}
	sent := map[string]*ipvsbench.Sent{}
	for r := 0; r < *runs; r++ {
		for _, p := range phases {
			for _, l := range libs {
				key := p.id + "/" + l.name
				h := ipvsbench.Hooks{}
				if l.name == "ipvskit" {
					h = hooks
				}
				res, err := ipvsbench.Phase(p.id, t, l.open, false, h)
				if err != nil {
					fail("phase %s, %s: %v", p.id, l.name, err)
				}
				results[key] = append(results[key], res)
				fmt.Fprintf(os.Stderr, "run %d phase %s %-9s %v (user %v, sys %v)\n", r+1, p.id, l.name,
					res.Time.Round(time.Microsecond), res.User.Round(time.Millisecond), res.Sys.Round(time.Millisecond))
			}
		}
	}
	for _, p := range phases {
		if p.id != "c" && !*traceAll {
			continue
		}
		for _, l := range libs {
			res, err := ipvsbench.Phase(p.id, t, l.open, true, ipvsbench.Hooks{})
			if err != nil {
				fail("tracing phase %s, %s: %v", p.id, l.name, err)
			}
			sent[p.id+"/"+l.name] = res.Sent
		}
	}

	fmt.Fprintf(out, "ipvskit vs github.com/moby/ipvs v1.1.0: %d services x %d destinations, %d runs, each in a fresh netns\n\n", t.Services, t.Dests, *runs)
	fmt.Fprintf(out, "| phase | ipvskit median | ipvskit best | moby/ipvs median | moby/ipvs best | moby/ipvskit (medians) | moby/ipvskit (bests) | ipvskit requests | moby/ipvs requests |\n")
	fmt.Fprintf(out, "|---|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, p := range phases {
		k, m := results[p.id+"/ipvskit"], results[p.id+"/moby/ipvs"]
		km, kb := stat(k, wall)
		mm, mb := stat(m, wall)
		fmt.Fprintf(out, "| (%s) %s | %s | %s | %s | %s | %.2fx | %.2fx | %s | %s |\n", p.id, p.what,
			dur(km), dur(kb), dur(mm), dur(mb), float64(mm)/float64(km), float64(mb)/float64(kb),
			sentStr(sent[p.id+"/ipvskit"]), sentStr(sent[p.id+"/moby/ipvs"]))
	}
	fmt.Fprintf(out, "\nCPU time of the process during the timed calls (medians; in the VM, sys is the guest kernel's):\n\n")
	fmt.Fprintf(out, "| phase | library | wall | user | sys | idle or waiting |\n|---|---|---:|---:|---:|---:|\n")
	for _, p := range phases {
		for _, l := range libs {
			rs := results[p.id+"/"+l.name]
			w, _ := stat(rs, wall)
			u, _ := stat(rs, func(r ipvsbench.Result) time.Duration { return r.User })
			s, _ := stat(rs, func(r ipvsbench.Result) time.Duration { return r.Sys })
			fmt.Fprintf(out, "| (%s) | %s | %s | %s | %s | %s |\n", p.id, l.name, dur(w), dur(u), dur(s), dur(max(w-u-s, 0)))
		}
	}
}

type phase struct{ id, what string }

func wall(r ipvsbench.Result) time.Duration { return r.Time }

// stat returns the median (the lower middle one for an even count) and the
// least of f over rs.
func stat(rs []ipvsbench.Result, f func(ipvsbench.Result) time.Duration) (median, best time.Duration) {
	if len(rs) == 0 {
		return 0, 0
	}
	ds := make([]time.Duration, len(rs))
	for i, r := range rs {
		ds[i] = f(r)
	}
	slices.Sort(ds)
	return ds[(len(ds)-1)/2], ds[0]
}

func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d == 0:
		return "0"
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

func sentStr(s *ipvsbench.Sent) string {
	if s == nil {
		return "-"
	}
	return strings.ReplaceAll(s.String(), "(s)", "s")
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "ipvsbench: "+format+"\n", args...)
	os.Exit(1)
}
