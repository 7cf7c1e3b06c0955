// Command proxierbench measures ipvskit's proxier on the running kernel (it
// needs root, IPVS, dummy links and nf_tables: run it in the VM rig) and
// prints a table:
//
//	(cd bench && go build -o /tmp/proxierbench ./cmd/proxierbench) &&
//	go build -o /tmp/vmexec ./internal/vm/cmd/vmexec &&
//	/tmp/vmexec /tmp/proxierbench -services 10000 -endpoints 10 -runs 3
//
// Rows: the proxier's initial sync of the state (ClusterIP services with
// ready endpoints; IPVS, VIPs, nftables rules, sysctls) against the raw ipvs
// batch that creates the same virtual servers; one endpoint added, one
// removed, one service added, and a sync with no change, on the synced node;
// and, as the peer, kube-proxy's IPVS-mode sync of the same services done
// with github.com/moby/ipvs (per VIP two gets and a destination dump, then a
// full dump), first on an empty table and then with nothing to change. Every
// run starts in a fresh namespace; times are the best of the runs. Netlink
// requests of the small changes are counted with strace, untimed.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"time"

	moby "github.com/moby/ipvs"

	ipvsbench "github.com/ipvskit/ipvskit/bench/ipvs"
	proxierbench "github.com/ipvskit/ipvskit/bench/proxier"
	"github.com/ipvskit/ipvskit/proxier"
)

type change struct {
	name string
	do   func(st *proxier.State, round int)
}

var changes = []change{
	{"one endpoint added", func(st *proxier.State, r int) {
		svc := st.Services["svc-0"]
		svc.Endpoints = append(svc.Endpoints, proxier.Endpoint{Addr: netip.MustParseAddr(fmt.Sprintf("198.19.255.%d", 10+r)), Ready: true})
		st.Services["svc-0"] = svc
	}},
	{"one endpoint removed", func(st *proxier.State, r int) {
		svc := st.Services[fmt.Sprintf("svc-%d", 1+r)]
		svc.Endpoints = svc.Endpoints[1:]
		st.Services[fmt.Sprintf("svc-%d", 1+r)] = svc
	}},
	{"one service added", func(st *proxier.State, r int) {
		st.Services[fmt.Sprintf("new-%d", r)] = proxier.Service{
			ClusterIPs: []netip.Addr{netip.MustParseAddr(fmt.Sprintf("198.19.254.%d", 10+r))},
			Ports:      []proxier.Port{{Name: "http", Protocol: proxier.TCP, Port: 80}},
			Endpoints:  []proxier.Endpoint{{Addr: netip.MustParseAddr(fmt.Sprintf("198.19.253.%d", 10+r)), Ready: true}},
		}
	}},
	{"no change", func(*proxier.State, int) {}},
}

func main() {
	services := flag.Int("services", 10000, "ClusterIP services")
	endpoints := flag.Int("endpoints", 10, "ready endpoints per service")
	runs := flag.Int("runs", 3, "runs (the best time is shown)")
	initialOnly := flag.Bool("initial-only", false, "only time the initial sync against the raw batch, once, and print its phases")
	flag.Parse()
	s := proxierbench.Shape{Services: *services, Endpoints: *endpoints}
	ctx := context.Background()
	best := map[string]time.Duration{}
	keep := func(k string, d time.Duration) {
		if b, ok := best[k]; !ok || d < b {
			best[k] = d
		}
		fmt.Fprintf(os.Stderr, "  %-28s %v\n", k, d.Round(time.Microsecond))
	}
	var first *proxier.Result
	for r := range *runs {
		fmt.Fprintf(os.Stderr, "run %d\n", r+1)
		d, err := proxierbench.RawCreate(s)
		check(err, "raw batch")
		keep("raw", d)

		n, err := proxierbench.NewNode()
		check(err, "node")
		st := s.State()
		var res *proxier.Result
		d, err = proxierbench.Timed(func() (err error) { res, err = n.P.Sync(ctx, st); return err })
		check(err, "initial sync")
		keep("initial", d)
		fmt.Fprintf(os.Stderr, "  initial sync phases: %+v\n", res.Phases)
		first = res
		if *initialOnly {
			n.Close()
			ipd, err := proxierbench.IPBatchVIPs(s)
			check(err, "ip -batch")
			nftd, err := proxierbench.NFTScript(s)
			check(err, "nft -f")
			fmt.Printf("initial sync %v, raw batch %v, ratio %.2f; phases %+v\n", best["initial"], best["raw"], float64(best["initial"])/float64(best["raw"]), res.Phases)
			fmt.Printf("references, same boot: ip -batch binding the %d VIPs %v; nft -f of the first sync's rules %v\n", s.Services, ipd, nftd)
			return
		}
		for _, c := range changes {
			c.do(st, 2*r)
			d, err = proxierbench.Timed(func() error { _, err := n.P.Sync(ctx, st); return err })
			check(err, c.name)
			keep(c.name, d)
		}
		n.Close()

		ns, err := ipvsbench.NewNetNS()
		check(err, "netns")
		h, err := moby.New(ns.Path())
		check(err, "moby")
		d, err = proxierbench.Timed(func() error { return proxierbench.KubeProxySync(h, s) })
		check(err, "kube-proxy-style first sync")
		keep("kube first", d)
		d, err = proxierbench.Timed(func() error { return proxierbench.KubeProxySync(h, s) })
		check(err, "kube-proxy-style sync")
		keep("kube again", d)
		h.Close()
		ns.Close()
	}

	// Count what each small change sends, on a freshly synced node.
	sent := map[string]ipvsbench.Sent{}
	n, err := proxierbench.NewNode()
	check(err, "node")
	st := s.State()
	_, err = n.P.Sync(ctx, st)
	check(err, "initial sync")
	for _, c := range changes {
		c.do(st, 99)
		sent[c.name], err = ipvsbench.TraceSends(func() error { _, err := n.P.Sync(ctx, st); return err })
		check(err, "tracing "+c.name)
	}
	n.Close()

	fmt.Printf("proxier on %d ClusterIP services x %d endpoints (nftables back end), best of %d runs, fresh netns each\n\n", s.Services, s.Endpoints, *runs)
	fmt.Printf("| what | time | against | ratio | netlink requests |\n|---|---:|---|---:|---|\n")
	fmt.Printf("| initial sync (%d IPVS requests, %d VIPs, rules, sysctls) | %s | raw ipvs batch of the same %d requests: %s | %.2fx | |\n",
		first.Plan.IPVSAdd.Len(), len(first.Plan.Bind), dur(best["initial"]), first.Plan.IPVSAdd.Len(), dur(best["raw"]),
		float64(best["initial"])/float64(best["raw"]))
	for _, c := range changes {
		fmt.Printf("| %s | %s | | | %s |\n", c.name, dur(best[c.name]), sent[c.name])
	}
	fmt.Printf("| kube-proxy-style sync with moby/ipvs, empty table | %s | proxier initial sync | %.2fx slower | |\n",
		dur(best["kube first"]), float64(best["kube first"])/float64(best["initial"]))
	fmt.Printf("| kube-proxy-style sync with moby/ipvs, nothing to change | %s | proxier no-op sync: %s | | %d gets + %d dumps, by construction |\n",
		dur(best["kube again"]), dur(best["no change"]), 2*s.Services, s.Services+1)
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

func check(err error, what string) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "proxierbench: %s: %v\n", what, err)
		os.Exit(1)
	}
}
