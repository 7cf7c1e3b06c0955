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
// every service. Each run of each phase uses a fresh network namespace. The
// time shown is the best of the runs. Netlink requests are counted with
// strace (which must be installed) in an extra, untimed call: phase c always,
// the others with -trace.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	ipvsbench "github.com/ipvskit/ipvskit/bench/ipvs"
)

func main() {
	services := flag.Int("services", 10000, "TCP services")
	dests := flag.Int("dests", 10, "masq destinations per service")
	runs := flag.Int("runs", 3, "runs of each phase (the best time is shown)")
	traceAll := flag.Bool("trace", false, "also count the requests of phases a, b and d with strace (slow)")
	flag.Parse()
	t := ipvsbench.Table{Services: *services, Dests: *dests}

	libs := []struct {
		name string
		open func(*ipvsbench.NetNS) (ipvsbench.Lib, error)
	}{{"ipvskit", ipvsbench.OpenIpvskit}, {"moby/ipvs", ipvsbench.OpenMoby}}
	phases := []struct{ id, what string }{
		{"a", fmt.Sprintf("create %d services x %d dests", t.Services, t.Dests)},
		{"b", "list services + destinations"},
		{"c", "change one weight"},
		{"d", "delete all services"},
	}
	best := map[string]time.Duration{}
	sent := map[string]*ipvsbench.Sent{}
	for r := 0; r < *runs; r++ {
		for _, p := range phases {
			for _, l := range libs {
				key := p.id + "/" + l.name
				res, err := ipvsbench.Phase(p.id, t, l.open, false)
				if err != nil {
					fail("phase %s, %s: %v", p.id, l.name, err)
				}
				if b, ok := best[key]; !ok || res.Time < b {
					best[key] = res.Time
				}
				fmt.Fprintf(os.Stderr, "run %d phase %s %-9s %v\n", r+1, p.id, l.name, res.Time.Round(time.Microsecond))
			}
		}
	}
	for _, p := range phases {
		if p.id != "c" && !*traceAll {
			continue
		}
		for _, l := range libs {
			res, err := ipvsbench.Phase(p.id, t, l.open, true)
			if err != nil {
				fail("tracing phase %s, %s: %v", p.id, l.name, err)
			}
			sent[p.id+"/"+l.name] = res.Sent
		}
	}

	fmt.Printf("ipvskit vs github.com/moby/ipvs v1.1.0: %d services x %d destinations, best of %d runs, each in a fresh netns\n\n", t.Services, t.Dests, *runs)
	fmt.Printf("| phase | ipvskit | moby/ipvs | moby/ipvskit | ipvskit requests | moby/ipvs requests |\n")
	fmt.Printf("|---|---:|---:|---:|---|---|\n")
	for _, p := range phases {
		k, m := best[p.id+"/ipvskit"], best[p.id+"/moby/ipvs"]
		fmt.Printf("| (%s) %s | %s | %s | %.2fx | %s | %s |\n", p.id, p.what, dur(k), dur(m), float64(m)/float64(k),
			sentStr(sent[p.id+"/ipvskit"]), sentStr(sent[p.id+"/moby/ipvs"]))
	}
}

func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
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
