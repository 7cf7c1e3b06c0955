// Command scalebench measures ipvskit's proxier at scale, phase by phase,
// against each phase's own kernel limit, in one boot of the VM rig (it needs
// root, IPVS, dummy links, nf_tables and ipset, and several GB of guest
// memory at 50,000 services):
//
//	(cd bench && CGO_ENABLED=0 go build -o /tmp/scalebench ./cmd/scalebench) &&
//	CGO_ENABLED=0 go build -o /tmp/vmexec-scale ./internal/vm/cmd/vmexec &&
//	/tmp/vmexec-scale -mem 8192 /tmp/scalebench -sizes 10000,50000 -endpoints 10 -runs 3
//
// The state is N ClusterIP TCP services with E ready endpoints each
// (bench/proxier's Shape). For each size, each run measures, each in a
// fresh network namespace and one after the other (so that drift hits every
// side alike):
//
//   - the kernel limits: one ipvs.Client.Apply of the proxier's own IPVS
//     batch (the same requests its first sync sends); one `ip -batch` of
//     the VIPs as `address add` lines (VIPAddresses) and as `route add local
//     ... table local` lines (VIPLocalRoutes); `nft -f` of the nftables
//     script of the first sync's rules (nftables back end) and `ipset
//     restore` + `iptables-nft-restore` of the same sets and rules (iptables
//     back end);
//   - for each back end and VIP mode asked for, the proxier's initial Sync
//     with its phases (Result.Phases), the heap after it, then on the synced
//     node a no-op Update, a one-endpoint change through Update, and the same
//     two through a whole-State Sync, each -repeat times;
//   - at -list-size services, listing every virtual server with its
//     destinations: ipvs.Client.Snapshot against github.com/moby/ipvs
//     (bench/ipvs phase b).
//
// Each row's ratio is taken within a run (the proxier's phase over its
// limit in that run), and the table shows the median over the runs with the
// range; times are medians. The raw per-run lines go to stderr; the tables,
// with each bar of issue 19 evaluated, to stdout.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	rulesbench "github.com/ipvskit/ipvskit/bench/iptables"
	ipvsbench "github.com/ipvskit/ipvskit/bench/ipvs"
	proxierbench "github.com/ipvskit/ipvskit/bench/proxier"
	"github.com/ipvskit/ipvskit/proxier"
)

// The bars of issue 19, item 4.
const (
	barTotal = 1.3  // initial Sync / sum of the per-phase limits, at most
	barSmall = 0.02 // a no-op or one-endpoint Update / initial user-space time, under (at barSmallAt)
	barList  = 1.5  // moby/ipvs listing / Snapshot, at least
)

// barSmallAt is the size at which the small-change bar applies.
const barSmallAt = 50000

type options struct {
	sizes     []int
	endpoints int
	runs      int
	repeat    int
	backends  []proxier.Backend
	modes     []proxier.VIPMode
	listSize  int
	settle    time.Duration
	quiet     time.Duration
	skip      map[string]bool
}

// The limits -skip can leave out (the slow reference tools at 50,000).
var limitNames = []string{"ip-addresses", "ip-routes", "nft", "ipset", "dummy", "nft-lib", "ipt-lib"}

// config is one proxier setup measured.
type config struct {
	backend proxier.Backend
	mode    proxier.VIPMode
}

func (c config) String() string { return c.backend.String() + ", VIPs as " + modeName(c.mode) }

func modeName(m proxier.VIPMode) string {
	if m == proxier.VIPLocalRoutes {
		return "local routes"
	}
	return "addresses"
}

// limits are one run's raw kernel limits: the reference tools (the limits
// issue 19 names) and, for comparison, the library's own call for the
// phase alone in a fresh namespace, without the proxier around it.
type limits struct {
	ipvs          time.Duration // raw ipvs batch (ipvs.Client.Apply): tool and library call alike
	addrs, routes time.Duration // ip -batch
	nft           time.Duration // nft -f
	ipset, iptRes time.Duration // ipset restore, iptables-nft-restore
	dummyLib      time.Duration // dummy.Client.Update of every VIP
	nftLib        time.Duration // NFTables.ApplyFull alone
	iptLib        time.Duration // IPTables.Apply (first) alone
}

func (l limits) vips(m proxier.VIPMode) time.Duration {
	if m == proxier.VIPLocalRoutes {
		return l.routes
	}
	return l.addrs
}

func (l limits) rules(b proxier.Backend) time.Duration {
	if b == proxier.IPTables {
		return add(l.ipset, l.iptRes)
	}
	return l.nft
}

// add sums durations, any of them skipped making the sum skipped.
func add(ds ...time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		if d == skipped {
			return skipped
		}
		t += d
	}
	return t
}

// sum is the sum of the per-phase limits of issue 19 for c.
func (l limits) sum(c config) time.Duration { return add(l.ipvs, l.vips(c.mode), l.rules(c.backend)) }

// vipsLib and rulesLib are the library's own calls alone (no library
// call for local routes yet: the tool's time).
func (l limits) vipsLib(m proxier.VIPMode) time.Duration {
	if m == proxier.VIPLocalRoutes {
		return l.routes
	}
	return l.dummyLib
}

func (l limits) rulesLib(b proxier.Backend) time.Duration {
	if b == proxier.IPTables {
		return l.iptLib
	}
	return l.nftLib
}

// tight is the sum, per phase, of the faster of the tool and the library
// call alone.
func (l limits) tight(c config) time.Duration {
	return add(l.ipvs, min(l.vips(c.mode), l.vipsLib(c.mode)), min(l.rules(c.backend), l.rulesLib(c.backend)))
}

// small changes, on the synced node, in this order each round.
var smallOps = []string{"no-op Update", "one-endpoint Update", "no-op Sync (whole State)", "one-endpoint Sync (whole State)"}

// sample is one proxier run: its initial Sync and the small changes after.
type sample struct {
	total      time.Duration
	ph         proxier.Phases
	heapInuse  uint64 // after the initial Sync, after a GC
	heapAlloc  uint64
	stateBytes uint64 // the State's own, measured as it was built
	small      map[string][]time.Duration
}

func (s *sample) userSpace() time.Duration { return s.ph.Validate + s.ph.Plan }
func (s *sample) rules() time.Duration     { return s.ph.Rules + s.ph.Sets }

type sizeResult struct {
	n           int
	ipvsReqs    int
	vips        int
	lim         []limits
	prox        map[config][]*sample
	unavailable map[config]string
	list        [][2]time.Duration // per run: ipvskit Snapshot, moby/ipvs
}

func main() {
	var o options
	sizes := flag.String("sizes", "10000,50000", "comma-separated numbers of ClusterIP services")
	flag.IntVar(&o.endpoints, "endpoints", 10, "ready endpoints per service")
	flag.IntVar(&o.runs, "runs", 3, "interleaved runs per size (medians shown, ranges beside)")
	flag.IntVar(&o.repeat, "repeat", 3, "rounds of the small changes per run")
	backend := flag.String("backend", "nftables", "netfilter back end of the proxier: nftables, iptables, both, or none (only the limits)")
	vipMode := flag.String("vip-mode", "addresses", "VIP mode: addresses, routes or both (routes needs proxier.VIPLocalRoutes; its raw limit is measured either way)")
	flag.IntVar(&o.listSize, "list-size", 10000, "size at which Snapshot is compared with moby/ipvs listing (0: never)")
	flag.DurationVar(&o.settle, "settle", time.Second, "least pause after each namespace is closed")
	flag.DurationVar(&o.quiet, "quiet-max", 3*time.Minute, "after each namespace is closed, wait until the CPUs are idle (the kernel's namespace teardown done), at most this long")
	skip := flag.String("skip", "", "comma-separated limits not to measure ("+strings.Join(limitNames, ", ")+"); a phase whose tool is skipped is compared with the library call alone, which can only make its ratio higher")
	flag.Parse()
	o.skip = map[string]bool{}
	for _, f := range strings.Split(*skip, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if !slices.Contains(limitNames, f) {
			fail("-skip: %q is not one of %s", f, strings.Join(limitNames, ", "))
		}
		o.skip[f] = true
	}
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > proxierbench.MaxServices {
			fail("-sizes: %q is not a number of services in 1-%d", f, proxierbench.MaxServices)
		}
		o.sizes = append(o.sizes, n)
	}
	switch *backend {
	case "nftables":
		o.backends = []proxier.Backend{proxier.NFTables}
	case "iptables":
		o.backends = []proxier.Backend{proxier.IPTables}
	case "both":
		o.backends = []proxier.Backend{proxier.NFTables, proxier.IPTables}
	case "none":
		// only the limits (and the listing)
	default:
		fail("-backend: %q is not nftables, iptables, both or none", *backend)
	}
	switch *vipMode {
	case "addresses":
		o.modes = []proxier.VIPMode{proxier.VIPAddresses}
	case "routes":
		o.modes = []proxier.VIPMode{proxier.VIPLocalRoutes}
	case "both":
		o.modes = []proxier.VIPMode{proxier.VIPAddresses, proxier.VIPLocalRoutes}
	default:
		fail("-vip-mode: %q is not addresses, routes or both", *vipMode)
	}
	if o.runs < 1 || o.repeat < 1 {
		fail("-runs and -repeat must be at least 1")
	}

	start := time.Now().UTC()
	fmt.Printf("scalebench: ipvskit's proxier per phase vs kernel limits\n")
	fmt.Printf("started %s, kernel %s, %d CPUs, GOMAXPROCS %d, %d run(s) per size, interleaved, fresh netns each\n",
		start.Format("2006-01-02 15:04 MST"), kernel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), o.runs)
	fmt.Printf("command: %s\n", strings.Join(os.Args, " "))
	for _, n := range o.sizes {
		r := measure(o, n)
		r.print(o)
	}
	fmt.Printf("\nfinished %s (%v)\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), time.Since(start).Round(time.Second))
}

func measure(o options, n int) *sizeResult {
	s := proxierbench.Shape{Services: n, Endpoints: o.endpoints}
	r := &sizeResult{n: n, prox: map[config][]*sample{}, unavailable: map[config]string{}}
	pause := func() {
		runtime.GC()
		time.Sleep(o.settle)
		d, ok := quiesce(o.quiet)
		if !ok {
			logf("  CPUs not idle after %v", d)
		} else if d > 5*time.Second {
			logf("  waited %v for idle CPUs", d.Round(time.Second))
		}
	}
	for run := range o.runs {
		logf("%d x %d, run %d: kernel limits", n, o.endpoints, run+1)
		l, reqs, vips := measureLimits(o, s, pause)
		r.lim = append(r.lim, l)
		r.ipvsReqs, r.vips = reqs, vips
		logf("  raw ipvs batch (%d requests) %v; ip -batch %d addresses %v, %d local routes %v; nft -f %v; ipset restore %v + iptables-nft-restore %v",
			reqs, ld(l.ipvs), vips, ld(l.addrs), vips, ld(l.routes), ld(l.nft), ld(l.ipset), ld(l.iptRes))
		logf("  library calls alone: dummy.Client.Update %v; NFTables.ApplyFull %v; IPTables.Apply %v", ld(l.dummyLib), ld(l.nftLib), ld(l.iptLib))
		for _, b := range o.backends {
			for _, m := range o.modes {
				c := config{b, m}
				if why, ok := r.unavailable[c]; ok {
					logf("  proxier (%v): skipped: %s", c, why)
					continue
				}
				logf("%d x %d, run %d: proxier (%v)", n, o.endpoints, run+1, c)
				smp, err := measureProxier(o, s, c)
				pause()
				if err != nil && m == proxier.VIPLocalRoutes && strings.Contains(err.Error(), "not implemented") {
					r.unavailable[c] = err.Error()
					logf("  unavailable: %v", err)
					continue
				}
				check(err, fmt.Sprintf("proxier (%v), %d services", c, n))
				r.prox[c] = append(r.prox[c], smp)
				ph := smp.ph
				logf("  initial Sync %v: validate %v plan %v start %v rules %v sets %v ipvs %v addresses %v conntrack %v; heap in use %s, alloc %s, state %s",
					smp.total, ph.Validate, ph.Plan, ph.Start, ph.Rules, ph.Sets, ph.IPVS, ph.Addresses, ph.Conntrack,
					mib(smp.heapInuse), mib(smp.heapAlloc), mib(smp.stateBytes))
				for _, op := range smallOps {
					logf("  %-32s %v", op, smp.small[op])
				}
			}
		}
		if n == o.listSize {
			t := ipvsbench.Table{Services: n, Dests: o.endpoints}
			var pair [2]time.Duration
			for i, lib := range []struct {
				name string
				open func(*ipvsbench.NetNS) (ipvsbench.Lib, error)
			}{{"ipvskit Snapshot", ipvsbench.OpenIpvskit}, {"moby/ipvs GetServices + GetDestinations", ipvsbench.OpenMoby}} {
				res, err := ipvsbench.Phase("b", t, lib.open, false, ipvsbench.Hooks{})
				check(err, "listing with "+lib.name)
				pause()
				pair[i] = res.Time
				logf("  list %d x %d, %s: %v", n, o.endpoints, lib.name, res.Time)
			}
			r.list = append(r.list, pair)
		}
	}
	return r
}

// measureLimits times the raw limits of the shape, each in a fresh
// namespace, from the proxier's own plan of its first sync (a dry run).
func measureLimits(o options, s proxierbench.Shape, pause func()) (l limits, ipvsReqs, vips int) {
	node, err := proxierbench.NewNode()
	check(err, "node for the plan")
	pl, err := node.P.Plan(s.State())
	node.Close()
	check(err, "plan")
	pause()
	rules := pl.Rules[proxier.IPv4]
	if rules == nil {
		fail("the first sync's plan has no IPv4 rules")
	}
	ipvsReqs, vips = pl.IPVSAdd.Len(), len(pl.Bind)
	l.ipvs, err = proxierbench.RawApply(&pl.IPVSAdd)
	check(err, "raw ipvs batch")
	logf("  raw ipvs batch %v", l.ipvs)
	pause()
	one := func(name string, d *time.Duration, f func() (time.Duration, error)) {
		if o.skip[name] {
			*d = skipped
			return
		}
		var err error
		*d, err = f()
		check(err, name)
		logf("  %s %v", name, *d)
		pause()
	}
	one("ip-addresses", &l.addrs, func() (time.Duration, error) { return proxierbench.IPBatchAddrs(pl.Bind) })
	one("ip-routes", &l.routes, func() (time.Duration, error) { return proxierbench.IPBatchRoutes(pl.Bind) })
	one("dummy", &l.dummyLib, func() (time.Duration, error) { return proxierbench.DummyBind(pl.Bind) })
	one("nft", &l.nft, func() (time.Duration, error) { return rulesbench.NFTReference(rules, nil) })
	one("nft-lib", &l.nftLib, func() (time.Duration, error) { return rulesbench.NFTablesBackend(rules, nil) })
	if o.skip["ipset"] {
		l.ipset, l.iptRes = skipped, skipped
	} else {
		l.ipset, l.iptRes, err = rulesbench.IPTablesReferenceSplit(rules)
		check(err, "ipset restore + iptables-nft-restore")
		pause()
	}
	one("ipt-lib", &l.iptLib, func() (time.Duration, error) { return rulesbench.IPTablesBackend(rules, nil) })
	return l, ipvsReqs, vips
}

// skipped marks a limit not measured (-skip): longer than any measurement,
// so that the faster of a tool and a library call is the one measured.
const skipped = time.Duration(1<<63 - 1)

// ld is d for the log: "skipped" for a limit not measured.
func ld(d time.Duration) string {
	if d == skipped {
		return "skipped"
	}
	return d.String()
}

// quiesce waits until the CPUs were at least 90% idle over half a second
// (the kernel tears a closed namespace down in the background, and a
// namespace with 500,000 destinations takes a while), at most max. It
// returns how long it waited and whether they were.
func quiesce(maxWait time.Duration) (time.Duration, bool) {
	start := time.Now()
	for time.Since(start) < maxWait {
		i0, t0, err := cpuTimes()
		if err != nil {
			return 0, true
		}
		time.Sleep(500 * time.Millisecond)
		i1, t1, err := cpuTimes()
		if err != nil || t1 == t0 || float64(i1-i0)/float64(t1-t0) >= 0.9 {
			return time.Since(start), true
		}
	}
	return time.Since(start), false
}

// cpuTimes returns the idle and total jiffies of /proc/stat's cpu line.
func cpuTimes() (idle, total uint64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected %q", line)
	}
	for i, x := range f[1:] {
		v, err := strconv.ParseUint(x, 10, 64)
		if err != nil {
			return 0, 0, err
		}
		total += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	return idle, total, nil
}

// measureProxier syncs the shape on a fresh node configured as c, measures
// the heap, then the small changes.
func measureProxier(o options, s proxierbench.Shape, c config) (*sample, error) {
	ctx := context.Background()
	smp := &sample{small: map[string][]time.Duration{}}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	st := s.State()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	if m1.HeapAlloc > m0.HeapAlloc {
		smp.stateBytes = m1.HeapAlloc - m0.HeapAlloc
	}
	node, err := proxierbench.NewNodeWith(c.backend, c.mode)
	if err != nil {
		return nil, err
	}
	defer node.Close()
	var res *proxier.Result
	smp.total, err = proxierbench.Timed(func() (err error) { res, err = node.P.Sync(ctx, st); return err })
	if err != nil {
		return nil, fmt.Errorf("initial Sync: %w", err)
	}
	smp.ph = res.Phases
	res = nil
	runtime.GC()
	runtime.ReadMemStats(&m1)
	smp.heapInuse, smp.heapAlloc = m1.HeapInuse, m1.HeapAlloc

	// The changes: svc-0 gains an endpoint through Update (st follows, so
	// that the whole-State Sync after it changes nothing), svc-1 gains
	// one through Sync. Update copies the last State's map, so st may be
	// changed in place.
	added := func(id string, round int) *proxier.Service {
		svc := st.Services[id]
		eps := slices.Clone(svc.Endpoints)
		a := netip.AddrFrom4([4]byte{198, 19, 250, byte(10 + round)})
		if id == "svc-1" {
			a = netip.AddrFrom4([4]byte{198, 19, 251, byte(10 + round)})
		}
		svc.Endpoints = append(eps, proxier.Endpoint{Addr: a, Ready: true})
		st.Services[id] = svc
		return &svc
	}
	for round := range o.repeat {
		for _, op := range smallOps {
			var f func() error
			switch op {
			case "no-op Update":
				f = func() error { _, err := node.P.Update(ctx, map[string]*proxier.Service{}); return err }
			case "one-endpoint Update":
				svc := added("svc-0", round)
				f = func() error {
					_, err := node.P.Update(ctx, map[string]*proxier.Service{"svc-0": svc})
					return err
				}
			case "no-op Sync (whole State)":
				f = func() error { _, err := node.P.Sync(ctx, st); return err }
			case "one-endpoint Sync (whole State)":
				added("svc-1", round)
				f = func() error { _, err := node.P.Sync(ctx, st); return err }
			}
			d, err := proxierbench.Timed(f)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", op, err)
			}
			smp.small[op] = append(smp.small[op], d)
		}
	}
	return smp, nil
}

// stat is a median with the range of a set of values; skipped if one of
// them was not measured.
type stat struct {
	med, lo, hi float64
	skipped     bool
}

func stats(v []float64) stat {
	if len(v) == 0 {
		return stat{}
	}
	v = slices.Clone(v)
	slices.Sort(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return stat{med: m, lo: v[0], hi: v[len(v)-1]}
}

func durStat(ds []time.Duration) stat {
	v := make([]float64, len(ds))
	for i, d := range ds {
		if d == skipped {
			return stat{skipped: true}
		}
		v[i] = d.Seconds()
	}
	return stats(v)
}

// dur writes a stat of seconds: the median, with the range when runs differ.
func (s stat) dur() string {
	if s.skipped {
		return "not measured"
	}
	if s.lo != s.hi {
		return fmt.Sprintf("%s (%s-%s)", secs(s.med), secs(s.lo), secs(s.hi))
	}
	return secs(s.med)
}

func (s stat) ratio() string {
	if s.skipped {
		return "-"
	}
	if s.lo != s.hi {
		return fmt.Sprintf("%.2fx (%.2f-%.2f)", s.med, s.lo, s.hi)
	}
	return fmt.Sprintf("%.2fx", s.med)
}

func (s stat) pct() string {
	if s.lo != s.hi {
		return fmt.Sprintf("%.1f%% (%.1f-%.1f)", 100*s.med, 100*s.lo, 100*s.hi)
	}
	return fmt.Sprintf("%.1f%%", 100*s.med)
}

func verdict(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**missed**"
}

func (r *sizeResult) print(o options) {
	runs := len(r.lim)
	col := func(f func(l limits) time.Duration) stat {
		v := make([]time.Duration, runs)
		for i, l := range r.lim {
			v[i] = f(l)
		}
		return durStat(v)
	}
	fmt.Printf("\n## %s services x %d endpoints (%s IPVS requests, %s VIPs), %d run(s)\n",
		num(r.n), o.endpoints, num(r.ipvsReqs), num(r.vips), runs)
	fmt.Printf("\nKernel limits (each alone, in a fresh netns; median, range):\n\n| limit | time |\n|---|---:|\n")
	rows := []struct {
		what string
		f    func(l limits) time.Duration
	}{
		{fmt.Sprintf("raw ipvs batch: one ipvs.Client.Apply of the first sync's %s requests", num(r.ipvsReqs)), func(l limits) time.Duration { return l.ipvs }},
		{fmt.Sprintf("`ip -batch` of %s `address add` lines", num(r.vips)), func(l limits) time.Duration { return l.addrs }},
		{fmt.Sprintf("`ip -batch` of %s `route add local ... table local` lines", num(r.vips)), func(l limits) time.Duration { return l.routes }},
		{"`nft -f` of the first sync's rules", func(l limits) time.Duration { return l.nft }},
		{"`ipset restore` of the same sets", func(l limits) time.Duration { return l.ipset }},
		{"`iptables-nft-restore --noflush` of the same rules and jumps", func(l limits) time.Duration { return l.iptRes }},
		{fmt.Sprintf("library alone: dummy.Client.Update binding the %s VIPs", num(r.vips)), func(l limits) time.Duration { return l.dummyLib }},
		{"library alone: NFTables.ApplyFull of the rules", func(l limits) time.Duration { return l.nftLib }},
		{"library alone: IPTables.Apply (first) of the rules", func(l limits) time.Duration { return l.iptLib }},
	}
	for _, row := range rows {
		fmt.Printf("| %s | %s |\n", row.what, col(row.f).dur())
	}

	for _, b := range o.backends {
		for _, m := range o.modes {
			c := config{b, m}
			if why, ok := r.unavailable[c]; ok {
				fmt.Printf("\n### proxier (%v): not measured: %s\n", c, why)
				continue
			}
			r.printConfig(o, c)
		}
	}
	if len(r.list) > 0 {
		var k, mo, ratio []float64
		for _, p := range r.list {
			k = append(k, p[0].Seconds())
			mo = append(mo, p[1].Seconds())
			ratio = append(ratio, p[1].Seconds()/p[0].Seconds())
		}
		rs := stats(ratio)
		fmt.Printf("\n### Listing %s virtual servers x %d destinations\n\n| side | time | moby/ipvskit | bar >= %.1fx |\n|---|---:|---:|---|\n",
			num(r.n), o.endpoints, barList)
		fmt.Printf("| ipvskit `Snapshot` | %s | %s | %s |\n", stats(k).dur(), rs.ratio(), verdict(rs.med >= barList))
		fmt.Printf("| moby/ipvs `GetServices` + `GetDestinations` per service | %s | | |\n", stats(mo).dur())
	}
}

func (r *sizeResult) printConfig(o options, c config) {
	smps := r.prox[c]
	if len(smps) == 0 {
		return
	}
	// per-run ratios: the proxier's phase over its limit in the same run
	ratio := func(num func(*sample) time.Duration, den func(limits) time.Duration) stat {
		var v []float64
		for i, s := range smps {
			d := den(r.lim[i])
			if d == skipped {
				return stat{skipped: true}
			}
			v = append(v, num(s).Seconds()/d.Seconds())
		}
		return stats(v)
	}
	times := func(f func(*sample) time.Duration) stat {
		var v []time.Duration
		for _, s := range smps {
			v = append(v, f(s))
		}
		return durStat(v)
	}
	share := func(f func(*sample) time.Duration) string {
		var v []float64
		for _, s := range smps {
			v = append(v, f(s).Seconds()/s.total.Seconds())
		}
		return stats(v).pct() + " of the Sync"
	}
	rulesLimit, vipLimit, vipLib := "`nft -f`", "`ip -batch` addresses", "dummy Update"
	rulesLib := "NFTables.ApplyFull"
	if c.backend == proxier.IPTables {
		rulesLimit, rulesLib = "`ipset restore` + `iptables-nft-restore`", "IPTables.Apply"
	}
	if c.mode == proxier.VIPLocalRoutes {
		vipLimit, vipLib = "`ip -batch` local routes", "(none yet: the tool)"
	}
	lim := func(f func(limits) time.Duration) string {
		var v []time.Duration
		for i := range smps {
			v = append(v, f(r.lim[i]))
		}
		return durStat(v).dur()
	}
	row := func(what string, ph func(*sample) time.Duration, limName string, limF func(limits) time.Duration, libName string, libF func(limits) time.Duration) {
		fmt.Printf("| %s | %s | %s %s | %s | %s %s | %s |\n", what, times(ph).dur(),
			limName, lim(limF), ratio(ph, limF).ratio(), libName, lim(libF), ratio(ph, libF).ratio())
	}
	fmt.Printf("\n### proxier (%v), initial Sync\n\n", c)
	fmt.Printf("| phase | proxier | limit (issue 19) | proxier / limit | library call alone | proxier / library |\n|---|---:|---|---:|---|---:|\n")
	user := func(name string, f func(*sample) time.Duration) {
		fmt.Printf("| %s | %s | - | %s | - | |\n", name, times(f).dur(), share(f))
	}
	user("validate (user space)", func(s *sample) time.Duration { return s.ph.Validate })
	user("plan (user space)", func(s *sample) time.Duration { return s.ph.Plan })
	user("start: VIP link, sysctls, read-back", func(s *sample) time.Duration { return s.ph.Start })
	row("rules and sets", (*sample).rules, rulesLimit, func(l limits) time.Duration { return l.rules(c.backend) },
		rulesLib, func(l limits) time.Duration { return l.rulesLib(c.backend) })
	ipvsF := func(l limits) time.Duration { return l.ipvs }
	row("IPVS", func(s *sample) time.Duration { return s.ph.IPVS }, "raw batch", ipvsF, "raw batch", ipvsF)
	row("VIPs", func(s *sample) time.Duration { return s.ph.Addresses }, vipLimit, func(l limits) time.Duration { return l.vips(c.mode) },
		vipLib, func(l limits) time.Duration { return l.vipsLib(c.mode) })
	other := func(s *sample) time.Duration {
		p := s.ph
		return s.total - p.Validate - p.Plan - p.Start - p.Rules - p.Sets - p.IPVS - p.Addresses - p.Conntrack
	}
	user("conntrack + unaccounted", func(s *sample) time.Duration { return s.ph.Conntrack + other(s) })
	totF := func(s *sample) time.Duration { return s.total }
	tot := ratio(totF, func(l limits) time.Duration { return l.sum(c) })
	tight := ratio(totF, func(l limits) time.Duration { return l.tight(c) })
	bar := fmt.Sprintf("%s: bar <= %.1fx %s", tot.ratio(), barTotal, verdict(tot.med <= barTotal))
	tightBar := tight.ratio()
	switch {
	case tot.skipped && tight.skipped:
		bar = "- (a limit skipped: bar not evaluated)"
	case tot.skipped:
		// A tool skipped: the sum of the faster limits is at most the
		// tools' sum, so the bar is met if it is met against it.
		bar = "- (a tool skipped)"
		tightBar += fmt.Sprintf(": bar <= %.1fx %s (stricter than against the tools)", barTotal, verdict(tight.med <= barTotal))
	}
	fmt.Printf("| **initial Sync** | %s | sum of the three %s | %s | sum of the faster of each %s | %s |\n",
		times(totF).dur(), lim(func(l limits) time.Duration { return l.sum(c) }), bar,
		lim(func(l limits) time.Duration { return l.tight(c) }), tightBar)
	user("user space (validate + plan)", (*sample).userSpace)

	var inuse, alloc, state []float64
	for _, s := range smps {
		inuse = append(inuse, float64(s.heapInuse))
		alloc = append(alloc, float64(s.heapAlloc))
		state = append(state, float64(s.stateBytes))
	}
	fmt.Printf("\nHeap after the initial Sync (runtime.GC, then ReadMemStats; median): HeapInuse %s, HeapAlloc %s; the State itself %s (HeapAlloc grew by that while it was built).\n",
		mib(uint64(stats(inuse).med)), mib(uint64(stats(alloc).med)), mib(uint64(stats(state).med)))

	fmt.Printf("\nOn the synced node (%d rounds per run; median over all rounds and runs; %% of the same run's initial user-space time):\n\n", o.repeat)
	fmt.Printf("| change | time | %% of initial user space | bar |\n|---|---:|---:|---|\n")
	for _, op := range smallOps {
		var ds []time.Duration
		var pct []float64
		for _, s := range smps {
			for _, d := range s.small[op] {
				ds = append(ds, d)
				pct = append(pct, d.Seconds()/s.userSpace().Seconds())
			}
		}
		p := stats(pct)
		bar := "-"
		if strings.HasSuffix(op, "Update") {
			bar = fmt.Sprintf("< %.0f%%", 100*barSmall)
			if r.n >= barSmallAt {
				bar += " " + verdict(p.med < barSmall)
			} else {
				bar += fmt.Sprintf(" (applies at %s; here %s)", num(barSmallAt), map[bool]string{true: "under", false: "over"}[p.med < barSmall])
			}
		}
		fmt.Printf("| %s | %s | %s | %s |\n", op, durStat(ds).dur(), p.pct(), bar)
	}
}

func secs(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// num writes n with thousands separators.
func num(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func kernel() string {
	rel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(rel))
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

func check(err error, what string) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "scalebench: "+format+"\n", args...)
	os.Exit(1)
}
