// Command kpbench measures ipvskit's proxier against kube-proxy's real IPVS
// proxier (v1.37.2, k8s.io/kubernetes' pkg/proxy/ipvs, run by the oracle in
// bench/kubeproxy) on the same kernel, in one boot of the VM rig:
//
//	bin=$(scripts/kube-proxy-oracle) &&
//	(cd bench && CGO_ENABLED=0 go build -o /var/tmp/kpbench ./cmd/kpbench) &&
//	CGO_ENABLED=0 go build -o /tmp/vmexec ./internal/vm/cmd/vmexec &&
//	/tmp/vmexec /var/tmp/kpbench -oracle "$bin" -services 1000,5000,10000 -endpoints 10 -runs 3
//
// (Any path on the host's root file system will do: the guest mounts it
// read-only.) The cluster is ClusterIP TCP Services with ready endpoints
// on another node, as Services and EndpointSlices for kube-proxy and as the
// equivalent proxier.State for ipvskit, which is configured like kube-proxy:
// kube-proxy's names and the iptables back end (ipsets plus iptables-nft,
// what kube-proxy runs on Debian); with -nft, ipvskit's default nftables back
// end too. Operations: the initial sync, one endpoint added, one removed,
// one service added, and a sync with nothing changed.
//
// Each run of a size measures kube-proxy, then ipvskit (then ipvskit with
// nftables), each in a fresh network namespace set up as a node (lo, and
// eth0 with the node IP), so that a drift of the VM hits every side. Times
// are the syncs' own: kube-proxy's as the oracle reports it (its
// syncProxyRules, not the reading of the objects), ipvskit's Proxier.Sync;
// the table shows the median of the runs. A kube-proxy sync that does not
// finish within -timeout is reported as not finished, and kube-proxy skips
// the larger sizes.
//
// Requests are counted with strace, untimed: kube-proxy's own count of its
// calls comes with every report (IPVS requests, ipset and iptables runs);
// besides, after the timed changes of the last run, each change is made once
// more on the same node with strace attached to the oracle and every program
// it runs, and at sizes up to -count-kube-initial its initial sync is run
// once more under strace. ipvskit's operations are repeated in an extra
// fresh node with strace attached to this process (and its iptables-restore
// children); its Result adds the set elements and rule writes.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	ipvsbench "github.com/ipvskit/ipvskit/bench/ipvs"
	kpb "github.com/ipvskit/ipvskit/bench/kubeproxybench"
	"github.com/ipvskit/ipvskit/proxier"
)

// operations are the table's rows: the initial sync, then kpb.Ops.
var operations = append([]string{"initial sync"}, func() []string {
	var s []string
	for _, o := range kpb.Ops {
		s = append(s, o.String())
	}
	return s
}()...)

type options struct {
	oracle    string
	sizes     []int
	endpoints int
	runs      int
	timeout   time.Duration
	nft       bool
	count     bool
	countInit int
	settle    time.Duration
}

func main() {
	var (
		o     options
		sizes string
	)
	flag.StringVar(&o.oracle, "oracle", os.Getenv("IPVSKIT_KUBE_PROXY_ORACLE"), "kube-proxy oracle binary (scripts/kube-proxy-oracle prints it; env IPVSKIT_KUBE_PROXY_ORACLE)")
	flag.StringVar(&sizes, "services", "1000,5000,10000", "comma-separated numbers of services, in increasing order")
	flag.IntVar(&o.endpoints, "endpoints", 10, "ready endpoints per service")
	flag.IntVar(&o.runs, "runs", 3, "interleaved runs per size (the median is shown)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "limit of one kube-proxy sync; a size it does not finish in is reported so, and larger sizes are skipped for kube-proxy")
	flag.BoolVar(&o.nft, "nft", true, "also measure ipvskit with its default nftables back end")
	flag.BoolVar(&o.count, "count", true, "count each side's netlink requests with strace, untimed")
	flag.IntVar(&o.countInit, "count-kube-initial", 1000, "largest size at which kube-proxy's initial sync is run once more under strace to count its requests (0: never; it is slow)")
	flag.DurationVar(&o.settle, "settle", 2*time.Second, "pause after each side's run, once its namespace is emptied")
	flag.Parse()
	var err error
	if o.sizes, err = kpb.Sizes(sizes); err != nil {
		fail("-services: %v", err)
	}
	if o.oracle == "" {
		fail("no oracle: pass -oracle or set IPVSKIT_KUBE_PROXY_ORACLE (scripts/kube-proxy-oracle prints its path)")
	}
	if _, err := os.Stat(o.oracle); err != nil {
		fail("oracle: %v", err)
	}
	if o.count {
		if _, err := exec.LookPath("strace"); err != nil {
			fmt.Fprintln(os.Stderr, "kpbench: no strace: requests are not counted")
			o.count = false
		}
	}
	start := time.Now().UTC()
	fmt.Printf("kpbench: kube-proxy v1.37.2 IPVS proxier (oracle %s) vs ipvskit's proxier\n", o.oracle)
	fmt.Printf("started %s, kernel %s, %d run(s) per size, interleaved, fresh netns per side and run; times are medians\n",
		start.Format("2006-01-02 15:04 MST"), kernel(), o.runs)
	fmt.Printf("command: %s\n", strings.Join(os.Args, " "))

	kubeLimit := 0 // the first size kube-proxy finished in no run; 0: none yet
	for _, n := range o.sizes {
		r := measure(o, n, kubeLimit == 0)
		if r.kubeRan && r.kubeDNFs == r.kubeRuns && kubeLimit == 0 {
			kubeLimit = n
		}
		r.print(o)
	}
	fmt.Printf("\nfinished %s (%v)\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), time.Since(start).Round(time.Second))
}

// sample is one operation's measurement by one side in one run.
type sample struct {
	d           time.Duration
	calls       kpb.Calls // kube-proxy
	set, writes int       // ipvskit: Result.SetElements, RuleWrites
}

type side struct {
	name    string
	samples [][]sample             // [operation][run]
	sent    map[int]ipvsbench.Sent // by operation, counted untimed
}

func newSide(name string) *side {
	return &side{name: name, samples: make([][]sample, len(operations)), sent: map[int]ipvsbench.Sent{}}
}

type sizeResult struct {
	services int
	kube     *side
	kubeRan  bool   // kube-proxy was measured at this size
	kubeDNF  string // what kube-proxy did not finish, in its last run that did not
	kubeDNFs int    // runs in which kube-proxy did not finish a sync
	kubeRuns int    // runs of kube-proxy made
	ipvskit  []*side
	backends []proxier.Backend
}

func measure(o options, n int, kube bool) *sizeResult {
	r := &sizeResult{services: n, kube: newSide("kube-proxy"), kubeRan: kube, backends: []proxier.Backend{proxier.IPTables}}
	if o.nft {
		r.backends = append(r.backends, proxier.NFTables)
	}
	for _, b := range r.backends {
		r.ipvskit = append(r.ipvskit, newSide("ipvskit ("+b.String()+")"))
	}
	for run := range o.runs {
		// A run that does not finish after one that did does not stop
		// the others (a busy machine can slow one down); when every run so
		// far failed to finish, kube-proxy is not run again at this size
		// nor at larger ones.
		if kube && (run == 0 || r.kubeDNFs < r.kubeRuns) {
			r.kubeRuns++
			logf("%d services, run %d: kube-proxy", n, run+1)
			// The last run counts the changes' requests after its timed
			// ones, on the same node.
			got, sent, err := runKube(o, n, o.count && run == o.runs-1)
			for i, rep := range got {
				r.kube.samples[i] = append(r.kube.samples[i], sample{d: secs(rep.Seconds), calls: rep.Calls})
				logf("  %-22s %9.3f s  %v", operations[i], rep.Seconds, rep.Calls)
			}
			for i, s := range sent {
				r.kube.sent[i+1] = s
				logf("  %-22s %v (strace, untimed)", operations[i+1], requests(s))
			}
			if errors.Is(err, kpb.ErrTimeout) {
				r.kubeDNFs++
				r.kubeDNF = fmt.Sprintf("%s did not finish in %v", operations[len(got)], o.timeout)
				logf("  %s", r.kubeDNF)
			} else if err != nil {
				fail("kube-proxy, %d services: %v", n, err)
			}
		}
		for i, b := range r.backends {
			logf("%d services, run %d: %s", n, run+1, r.ipvskit[i].name)
			got, err := runIPVSKit(o, n, b)
			if err != nil {
				fail("ipvskit (%v), %d services: %v", b, n, err)
			}
			for j, s := range got {
				r.ipvskit[i].samples[j] = append(r.ipvskit[i].samples[j], s)
				logf("  %-22s %9.3f s  %d set elements, %d rule writes", operations[j], s.d.Seconds(), s.set, s.writes)
			}
		}
	}
	if !o.count {
		return r
	}
	for i, b := range r.backends {
		logf("%d services: counting %s's requests (strace, untimed)", n, r.ipvskit[i].name)
		sent, err := countIPVSKit(o, n, b)
		if err != nil {
			fail("counting ipvskit (%v): %v", b, err)
		}
		for j, s := range sent {
			r.ipvskit[i].sent[j] = s
			logf("  %-22s %v", operations[j], requests(s))
		}
	}
	if kube && r.kubeDNFs < r.kubeRuns && n <= o.countInit {
		logf("%d services: counting kube-proxy's initial sync's requests (strace, untimed)", n)
		sent, err := countKubeInitial(o, n)
		if err != nil {
			// Under strace the sync may run over the limit.
			logf("  not counted: %v", err)
		} else {
			r.kube.sent[0] = sent
			logf("  %-22s %v", operations[0], requests(sent))
		}
	}
	return r
}

// runKube runs the oracle in a fresh node through the operations and returns
// the reports of the syncs it finished; the error wraps kpb.ErrTimeout if one
// ran over o.timeout. With count, each change is then made once more on the
// same node with strace attached to the oracle, untimed, and what it sent
// is returned by change (Ops order); a failure there is only logged.
func runKube(o options, n int, count bool) (reps []kpb.Report, sent []ipvsbench.Sent, err error) {
	m, err := kpb.NewModel(n, o.endpoints)
	if err != nil {
		return nil, nil, err
	}
	node, err := kpb.NewNode()
	if err != nil {
		return nil, nil, err
	}
	defer settle(o, node)
	dir, err := os.MkdirTemp("", "kpbench-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	k, err := kpb.StartKubeProxy(o.oracle, node, m, dir, "")
	if err != nil {
		return nil, nil, err
	}
	sync := func(op kpb.Op, round int, limit time.Duration) (kpb.Report, error) {
		m.Apply(op, round)
		var err error
		if op == kpb.NoChange {
			err = k.Resync()
		} else {
			err = k.Change(m)
		}
		if err != nil {
			return kpb.Report{}, err
		}
		return k.Wait(limit)
	}
	rep, err := k.Wait(o.timeout)
	if err != nil {
		k.Kill()
		return nil, nil, withLog(err, k)
	}
	reps = append(reps, rep)
	for _, op := range kpb.Ops {
		rep, err := sync(op, 0, o.timeout)
		if err != nil {
			k.Kill()
			return reps, nil, withLog(err, k)
		}
		reps = append(reps, rep)
	}
	if count {
		for _, op := range kpb.Ops {
			s, err := countKubeChange(k, dir, func() error {
				_, err := sync(op, 1, 3*o.timeout)
				return err
			})
			if err != nil {
				logf("  %v not counted: %v", op, err)
				k.Kill()
				return reps, sent, nil
			}
			sent = append(sent, s)
		}
	}
	return reps, sent, k.Stop(time.Minute)
}

func withLog(err error, k *kpb.KubeProxy) error {
	if errors.Is(err, kpb.ErrTimeout) {
		return err
	}
	return fmt.Errorf("%w; oracle's log:\n%s", err, k.Log())
}

// countKubeChange runs change with strace attached to the oracle.
func countKubeChange(k *kpb.KubeProxy, dir string, change func() error) (ipvsbench.Sent, error) {
	file := dir + "/strace.txt"
	defer os.Remove(file)
	stop, err := kpb.Attach(k.Pid(), file)
	if err != nil {
		return ipvsbench.Sent{}, err
	}
	err = change()
	stop()
	if err != nil {
		return ipvsbench.Sent{}, err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return ipvsbench.Sent{}, err
	}
	segs, err := kpb.ParseSyncs(b)
	if err != nil {
		return ipvsbench.Sent{}, err
	}
	if len(segs) != 2 {
		return ipvsbench.Sent{}, fmt.Errorf("strace saw %d report lines, want 1", len(segs)-1)
	}
	return segs[0], nil
}

// countKubeInitial starts the oracle under strace in a fresh node and
// counts what it (with every ipset and iptables it runs) sent up to the end
// of its first sync, the start of the program included.
func countKubeInitial(o options, n int) (ipvsbench.Sent, error) {
	m, err := kpb.NewModel(n, o.endpoints)
	if err != nil {
		return ipvsbench.Sent{}, err
	}
	node, err := kpb.NewNode()
	if err != nil {
		return ipvsbench.Sent{}, err
	}
	defer settle(o, node)
	dir, err := os.MkdirTemp("", "kpbench-")
	if err != nil {
		return ipvsbench.Sent{}, err
	}
	defer os.RemoveAll(dir)
	file := dir + "/strace.txt"
	k, err := kpb.StartKubeProxy(o.oracle, node, m, dir, file)
	if err != nil {
		return ipvsbench.Sent{}, err
	}
	if _, err := k.Wait(3 * o.timeout); err != nil {
		k.Kill()
		return ipvsbench.Sent{}, withLog(err, k)
	}
	if err := k.Stop(time.Minute); err != nil {
		return ipvsbench.Sent{}, err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return ipvsbench.Sent{}, err
	}
	segs, err := kpb.ParseSyncs(b)
	if err != nil {
		return ipvsbench.Sent{}, err
	}
	if len(segs) < 2 {
		return ipvsbench.Sent{}, fmt.Errorf("strace saw no report line")
	}
	return segs[0], nil
}

// runIPVSKit syncs ipvskit's proxier in a fresh node through the operations.
func runIPVSKit(o options, n int, b proxier.Backend) ([]sample, error) {
	m, err := kpb.NewModel(n, o.endpoints)
	if err != nil {
		return nil, err
	}
	node, err := kpb.NewNode()
	if err != nil {
		return nil, err
	}
	defer settle(o, node)
	k, err := kpb.NewIPVSKit(node, b)
	if err != nil {
		return nil, err
	}
	defer k.Close()
	var out []sample
	sync := func(what string) error {
		st := m.State()
		ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
		defer cancel()
		t := time.Now()
		res, err := k.P.Sync(ctx, st)
		d := time.Since(t)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, sample{d: d, set: res.SetElements, writes: res.RuleWrites})
		return nil
	}
	if err := sync(operations[0]); err != nil {
		return out, err
	}
	for _, op := range kpb.Ops {
		m.Apply(op, 0)
		if err := sync(op.String()); err != nil {
			return out, err
		}
	}
	return out, nil
}

// countIPVSKit is runIPVSKit's operations, each counted with strace
// attached to this process, untimed.
func countIPVSKit(o options, n int, b proxier.Backend) ([]ipvsbench.Sent, error) {
	m, err := kpb.NewModel(n, o.endpoints)
	if err != nil {
		return nil, err
	}
	node, err := kpb.NewNode()
	if err != nil {
		return nil, err
	}
	defer settle(o, node)
	k, err := kpb.NewIPVSKit(node, b)
	if err != nil {
		return nil, err
	}
	defer k.Close()
	var out []ipvsbench.Sent
	sync := func() error {
		st := m.State()
		s, err := ipvsbench.TraceSends(func() error {
			_, err := k.P.Sync(context.Background(), st)
			return err
		})
		out = append(out, s)
		return err
	}
	if err := sync(); err != nil {
		return nil, err
	}
	for _, op := range kpb.Ops {
		m.Apply(op, 0)
		if err := sync(); err != nil {
			return nil, fmt.Errorf("%v: %w", op, err)
		}
	}
	return out, nil
}

// settle empties and closes a node's namespace, then waits a moment, so that
// the kernel's teardown does not overlap the next measurement.
func settle(o options, n *kpb.Node) {
	if err := n.Close(); err != nil {
		logf("  closing the namespace: %v", err)
	}
	time.Sleep(o.settle)
}

func (r *sizeResult) print(o options) {
	fmt.Printf("\n%d ClusterIP services x %d endpoints", r.services, o.endpoints)
	switch {
	case !r.kubeRan:
		fmt.Printf(" (kube-proxy skipped: it did not finish a smaller size)")
	case r.kubeDNFs > 0:
		fmt.Printf(" (kube-proxy, %d of %d runs: %s)", r.kubeDNFs, r.kubeRuns, r.kubeDNF)
	}
	fmt.Printf("\n\n| operation | kube-proxy | %s | kube-proxy / ipvskit | kube-proxy calls | %s requests |\n|---|---:|---:|---:|---|---|\n",
		r.ipvskit[0].name, r.ipvskit[0].name)
	for i, op := range operations {
		kt, ok := median(r.kube.samples[i])
		it, _ := median(r.ipvskit[0].samples[i])
		kcell, ratio, calls := "-", "-", "-"
		switch {
		case ok:
			kcell, ratio = dur(kt), fmt.Sprintf("%.1fx", kt.Seconds()/it.Seconds())
			calls = callsString(r.kube.samples[i][0].calls)
			if s, ok := r.kube.sent[i]; ok {
				calls += "; " + requests(s)
			}
		case r.kubeRan && r.kubeDNFs > 0 && len(r.kube.samples[i]) == 0 && (i == 0 || len(r.kube.samples[i-1]) > 0):
			kcell = fmt.Sprintf("did not finish in %v", o.timeout)
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", op, kcell, dur(it), ratio, calls, ipvskitCalls(r.ipvskit[0], i))
	}
	for j := 1; j < len(r.ipvskit); j++ {
		s := r.ipvskit[j]
		fmt.Printf("\n| operation | %s | kube-proxy / ipvskit | %s requests |\n|---|---:|---:|---|\n", s.name, s.name)
		for i, op := range operations {
			it, _ := median(s.samples[i])
			ratio := "-"
			if kt, ok := median(r.kube.samples[i]); ok {
				ratio = fmt.Sprintf("%.1fx", kt.Seconds()/it.Seconds())
			}
			fmt.Printf("| %s | %s | %s | %s |\n", op, dur(it), ratio, ipvskitCalls(s, i))
		}
	}
}

func ipvskitCalls(s *side, i int) string {
	var parts []string
	if x, ok := s.sent[i]; ok {
		parts = append(parts, requests(x))
	}
	if len(s.samples[i]) > 0 {
		x := s.samples[i][0]
		parts = append(parts, fmt.Sprintf("%s set elements, %s rule writes", num(x.set), num(x.writes)))
	}
	return strings.Join(parts, "; ")
}

func requests(s ipvsbench.Sent) string {
	return fmt.Sprintf("%s netlink requests (%s dumps) in %s sends", num(s.Requests), num(s.Dumps), num(s.Syscalls))
}

// num writes n with thousands separators.
func num[T ~int | ~int64](n T) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

func callsString(c kpb.Calls) string {
	return fmt.Sprintf("IPVS %s writes + %s reads; %s ipset, %s iptables runs", num(c.IPVS), num(c.IPVSRead), num(c.IPSet), num(c.IPTables))
}

func median(s []sample) (time.Duration, bool) {
	if len(s) == 0 {
		return 0, false
	}
	d := make([]time.Duration, len(s))
	for i, x := range s {
		d[i] = x.d
	}
	slices.Sort(d)
	if len(d)%2 == 1 {
		return d[len(d)/2], true
	}
	return (d[len(d)/2-1] + d[len(d)/2]) / 2, true
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

func kernel() string {
	rel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	ver, _ := os.ReadFile("/proc/sys/kernel/version")
	return string(bytes.TrimSpace(rel)) + " " + string(bytes.TrimSpace(ver))
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kpbench: "+format+"\n", args...)
	os.Exit(1)
}
