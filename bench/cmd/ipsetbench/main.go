// Command ipsetbench compares ipvskit's ipset Replace with Debian's
// `ipset restore` of the same hash:ip,port entries, in one run on the running
// kernel (root, ipset and the ipset program needed; the build machine's own
// kernel has them), each run of each side in a fresh network namespace:
//
//	cd bench && go run ./cmd/ipsetbench -entries 100000 -runs 5
//
// It prints the median and best time of each side and their ratio
// (Replace / restore; below 1 means Replace is faster). "replace (set full)"
// replaces a set that already holds as many other entries, so it also swaps
// and destroys a full set.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	ipsetbench "github.com/ipvskit/ipvskit/bench/ipset"
)

func main() {
	n := flag.Int("entries", 100000, "hash:ip,port entries")
	runs := flag.Int("runs", 5, "runs of each side")
	flag.Parse()
	entries := ipsetbench.Entries(*n)

	sides := []struct {
		name string
		run  func() (time.Duration, error)
	}{
		{"ipset restore", func() (time.Duration, error) { return ipsetbench.Restore(entries) }},
		{"ipvskit Replace (new set)", func() (time.Duration, error) { return ipsetbench.Replace(entries, false) }},
		{"ipvskit Replace (set full)", func() (time.Duration, error) { return ipsetbench.Replace(entries, true) }},
	}
	times := make([][]time.Duration, len(sides))
	for r := 0; r < *runs; r++ {
		for i, s := range sides { // interleaved, so drift hits every side alike
			d, err := s.run()
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", s.name, err)
				os.Exit(1)
			}
			times[i] = append(times[i], d)
			fmt.Fprintf(os.Stderr, "run %d %-27s %v\n", r+1, s.name, d.Round(time.Millisecond))
		}
	}
	med := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	base := med(times[0])
	fmt.Printf("%d hash:ip,port entries, %d runs each, fresh netns per run\n", *n, *runs)
	fmt.Printf("| %-27s | %10s | %10s | %s |\n", "side", "median", "best", "median / ipset restore")
	fmt.Printf("|%s|%s|%s|%s|\n", "-----------------------------", "------------", "------------", "------------------------")
	for i, s := range sides {
		fmt.Printf("| %-27s | %10v | %10v | %.2f |\n", s.name, med(times[i]).Round(time.Millisecond),
			slices.Min(times[i]).Round(time.Millisecond), float64(med(times[i]))/float64(base))
	}
}
