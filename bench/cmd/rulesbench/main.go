// Command rulesbench compares ipvskit's two netfilter back ends (package
// iptables) with the reference tools doing the same work, on a model of a
// node in a cluster of -services services, on the running kernel (root;
// ipset, nf_tables and both iptables flavors needed: the build machine's own
// kernel has them). Every run of every side starts in a fresh network
// namespace, and the sides are interleaved run by run:
//
//	cd bench && go run ./cmd/rulesbench -services 10000 -runs 5
//
// It prints each side's median and best time and the ratio of the reference
// tool's median to the back end's (above 1: the back end is faster).
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	rulesbench "github.com/ipvskit/ipvskit/bench/iptables"
	"github.com/ipvskit/ipvskit/iptables"
)

func main() {
	n := flag.Int("services", 10000, "services in the model")
	runs := flag.Int("runs", 5, "runs of each side")
	flag.Parse()
	base := rulesbench.Model(*n)
	delta := rulesbench.OneService(base, *n)
	total := 0
	for _, s := range iptables.Sets() {
		total += base.Len(s)
	}

	type side struct {
		name string
		run  rulesbench.Side
		d    *rulesbench.Delta
	}
	groups := []struct {
		title string
		sides []side // sides[0] is the back end; the others are references
	}{
		{"iptables back end, full sync", []side{
			{"ipvskit IPTables.Apply (first)", rulesbench.IPTablesBackend, nil},
			{"ipset restore + iptables-nft-restore", rulesbench.IPTablesReference(true), nil},
		}},
		{"iptables back end, one-service incremental sync", []side{
			{"ipvskit IPTables.Apply (delta)", rulesbench.IPTablesBackend, &delta},
			{"ipset restore (the 4 adds)", rulesbench.IPTablesReference(false), &delta},
			{"ipset restore + iptables-nft-restore", rulesbench.IPTablesReference(true), &delta},
		}},
		{"nftables back end, full sync", []side{
			{"ipvskit NFTables.ApplyFull", rulesbench.NFTablesBackend, nil},
			{"nft -f (rendered script)", rulesbench.NFTReference, nil},
		}},
		{"nftables back end, one-service incremental sync", []side{
			{"ipvskit NFTables.Apply (delta)", rulesbench.NFTablesBackend, &delta},
			{"nft -f (the 4 add element lines)", rulesbench.NFTReference, &delta},
		}},
	}
	med := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	fmt.Printf("model: %d services, %d set members in all; %d runs per side, fresh netns per run\n\n", *n, total, *runs)
	for _, g := range groups {
		times := make([][]time.Duration, len(g.sides))
		for r := 0; r < *runs; r++ {
			for i, s := range g.sides {
				d, err := s.run(base, s.d)
				if err != nil {
					fmt.Fprintf(os.Stderr, "%s: %s: %v\n", g.title, s.name, err)
					os.Exit(1)
				}
				times[i] = append(times[i], d)
			}
		}
		fmt.Printf("%s\n\n", g.title)
		fmt.Printf("| %-38s | %10s | %10s | %s |\n", "side", "median", "best", "reference median / back end median")
		fmt.Printf("|%s|%s|%s|%s|\n", "----------------------------------------", "------------", "------------", "------------------------------------")
		own := med(times[0])
		for i, s := range g.sides {
			ratio := "-"
			if i > 0 {
				ratio = fmt.Sprintf("%.1f", float64(med(times[i]))/float64(own))
			}
			fmt.Printf("| %-38s | %10v | %10v | %s |\n", s.name, med(times[i]).Round(10*time.Microsecond),
				slices.Min(times[i]).Round(10*time.Microsecond), ratio)
		}
		fmt.Println()
	}
}
