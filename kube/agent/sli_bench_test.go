package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ipvskit/ipvskit/kube/internal/apiservertest"
	"github.com/ipvskit/ipvskit/proxier"
)

var (
	sliSingles   = flag.Int("sli.singles", 150, "BenchmarkAgentSLI*: EndpointSlice updates made one at a time")
	sliChurn     = flag.Duration("sli.churn", 2*time.Minute, "BenchmarkAgentSLI*: how long the churn of updates lasts")
	sliRate      = flag.Int("sli.rate", 50, "BenchmarkAgentSLI*: EndpointSlice updates a second during the churn")
	sliMinSync   = flag.Duration("sli.minsync", 0, "BenchmarkAgentSLI*: the agent's ipvs.minSyncPeriod (kube-proxy's IPVS default: 0)")
	sliReconcile = flag.Duration("sli.reconcile", 0, "BenchmarkAgentSLIKernel: the agent's Options.ReconcilePeriod (0: its default, the syncPeriod)")
)

// BenchmarkAgentSLI measures the agent on the fakes against a real API
// server holding n ClusterIP Services x 10 endpoints, for n of 1,000,
// 10,000, 30,000 and 50,000 (made once per n, timed: "populate-s"): from the
// informers' first lists to the end of the first Sync; network programming
// latency as kube-proxy defines it (an EndpointSlice's
// last-change-trigger-time, set by the writer to the time of its change,
// to the end of the sync that applied it), for -sli.singles updates made
// one at a time and under a churn of -sli.rate updates a second for
// -sli.churn; for the single updates also the API write's return -> the
// destination in the fake IPVS; and the process's heap and RSS against the
// API objects' own size. Each phase is logged (-v). See docs/benchmarks.md.
//
//	cd kube && IPVSKIT_TEST_APISERVER=$(../scripts/test-apiserver) \
//	  go test -run '^$' -bench 'AgentSLI/services=10000$' -benchtime 1x -timeout 60m ./agent
func BenchmarkAgentSLI(b *testing.B) {
	for _, n := range []int{1000, 10000, 30000, 50000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			cl := newSLICluster(b, n)
			for range b.N {
				r := &rig{srv: cl.srv, c: cl.c, woken: make(chan struct{}, 1), ctx: context.Background()}
				arr := &arrivals{}
				r.wrapIPVS = func(d proxier.IPVS) proxier.IPVS { return notifyIPVS{d, arr} }
				cfg := testConfig()
				cfg.MinSyncPeriod = *sliMinSync
				cl.measure(b, r, func() { r.startFakes(b, cfg) }, arr.expect)
			}
		})
	}
}

// sliCluster is an API server populated for the SLI benchmarks.
type sliCluster struct {
	srv         *apiservertest.Server
	c           kubernetes.Interface
	n           int
	node        bool // the agents' Node is made
	single, chu int  // updates made so far, for fresh addresses and turns
}

func newSLICluster(b *testing.B, n int) *sliCluster {
	dir := b.TempDir()
	seed := ""
	if s := os.Getenv(sliSeedEnv); s != "" {
		seed = filepath.Join(s, fmt.Sprint(n), "etcd")
	}
	var pop time.Duration
	srv := seeded(b, seed, dir)
	if srv == nil {
		srv = apiservertest.StartIn(b, dir)
		start := time.Now()
		populate(b, srv.Client(), n, 10)
		pop = time.Since(start)
		if seed != "" {
			// Saved once populated, and started again from what was saved.
			srv.Exit(b)
			copyTree(b, filepath.Join(dir, "etcd"), seed)
			srv = apiservertest.StartIn(b, dir)
		}
	}
	cl := &sliCluster{srv: srv, c: srv.Client(), n: n}
	js, pb, objs := apiSize(b, cl.c)
	if objs < 2*n {
		b.Fatalf("the API server holds %d Services and EndpointSlices, want at least %d", objs, 2*n)
	}
	b.Logf("populate: %d Services and their EndpointSlices in %v; the API objects as listed (%d): %.1f MB JSON, %.1f MB protobuf",
		n, pop.Round(time.Millisecond), objs, mb(js), mb(pb))
	b.ReportMetric(pop.Seconds(), "populate-s")
	b.ReportMetric(mb(js), "objects-json-MB")
	b.ReportMetric(mb(pb), "objects-proto-MB")
	return cl
}

// sliSeedEnv names a directory of populated API servers' etcd data, one
// per size (DIR/10000/etcd): a size found there starts from a copy of it
// instead of populating (which takes minutes, and more than an hour in the
// emulated VM); a size not found is populated and saved there. Make the
// seeds on the host, where the directory is writable:
//
//	cd kube && IPVSKIT_SLI_SEED=/var/tmp/sli-seed IPVSKIT_TEST_APISERVER=$(../scripts/test-apiserver) \
//	  go test -run '^$' -bench '^BenchmarkAgentSLI$/^services=10000$' -benchtime 1x -sli.churn 1s ./agent
const sliSeedEnv = "IPVSKIT_SLI_SEED"

// seeded starts an API server in dir from a copy of the etcd data in seed,
// or returns nil if there is none.
func seeded(b *testing.B, seed, dir string) *apiservertest.Server {
	if seed == "" {
		return nil
	}
	if _, err := os.Stat(seed); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	copyTree(b, seed, filepath.Join(dir, "etcd"))
	b.Logf("populate: started from %s", seed)
	return apiservertest.StartIn(b, dir)
}

// copyTree copies the directory from to to (which must not exist).
func copyTree(b *testing.B, from, to string) {
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		b.Fatalf("copying %s to %s: %v: %s", from, to, err, out)
	}
}

// measure starts an agent on r (start) and measures it; arrive, if not
// nil, tells when a destination reaches the kernel, else the end of the
// Proxier's Update that added it counts.
func (cl *sliCluster) measure(b *testing.B, r *rig, start func(), arrive func(netip.Addr) <-chan time.Time) {
	if !cl.node {
		r.createNode(b, nodeIP)
		cl.node = true
	}
	tr := traceAgent(r)
	before := readMem()
	start()
	r.until(b, "the first sync", func() bool { return r.a.firstSyncEnd.Load() != 0 })
	first := time.Duration(r.a.firstSyncEnd.Load() - r.a.cachesSynced.Load())
	synced := readMem()
	b.Logf("first sync: %v after the informers synced", first.Round(time.Millisecond))
	b.ReportMetric(first.Seconds(), "first-sync-s")

	cl.singles(b, tr, arrive)
	cl.churn(b, tr)

	after := readMem()
	r.stop()
	r.a, r.prepare = nil, nil
	r.mu.Lock()
	for _, e := range r.reconciles {
		b.Logf("a Reconcile (drift check, the Proxier held) at %v took %v", e.Start.Format("15:04:05.000"), e.Duration.Round(time.Millisecond))
	}
	r.events, r.reconciles = nil, nil
	r.mu.Unlock()
	b.Logf("heap in use after GC: before the agent %.1f MB, after its first sync %.1f MB, after the churn %.1f MB; "+
		"RSS %.1f / %.1f / %.1f MB, peak (VmHWM) %.1f MB",
		mb(before.heap), mb(synced.heap), mb(after.heap), mb(before.rss), mb(synced.rss), mb(after.rss), mb(after.hwm))
	b.ReportMetric(mb(synced.heap-min(synced.heap, before.heap)), "agent-heap-MB")
	if r.ipvs != nil {
		time.Sleep(time.Second) // the informers' goroutines end after Run returns
		fake := readMem()
		runtime.KeepAlive(r.ipvs)
		b.Logf("heap in use after GC with the agent stopped and released, its fake IPVS kept: %.1f MB", mb(fake.heap))
		b.ReportMetric(mb(fake.heap-min(fake.heap, before.heap)), "fake-ipvs-heap-MB")
	}
	b.ReportMetric(mb(after.heap), "heap-MB")
	b.ReportMetric(mb(after.rss), "rss-MB")
	b.ReportMetric(mb(after.hwm), "hwm-MB")
	b.ReportMetric(0, "ns/op")
}

// singles makes -sli.singles EndpointSlice updates one at a time, each an
// endpoint added to another Service, and waits for each to be applied.
func (cl *sliCluster) singles(b *testing.B, tr *sliTracer, arrive func(netip.Addr) <-chan time.Time) {
	ctx := context.Background()
	var toKernel, write []time.Duration
	var samples []sliSample
	for range *sliSingles {
		u := cl.single
		cl.single++
		i := (u*7919 + 13) % cl.n // a prime stride: distinct Services
		added := benchAddr(netip.MustParseAddr("198.19.250.1"), u)
		name := fmt.Sprintf("svc-%d-1", i)
		var arrived <-chan time.Time
		if arrive != nil {
			arrived = arrive(added)
		}
		at := time.Now()
		if err := patchSlice(ctx, cl.c, name, at, append(scaleAddrs(i, 10), added.String())); err != nil {
			b.Fatal(err)
		}
		wrote := time.Now()
		s := tr.wait(b, name, at)
		kernel := s.updateEnd
		if arrived != nil {
			select {
			case kernel = <-arrived:
			case <-time.After(patience):
				b.Fatalf("%v: not in the kernel after %v", added, patience)
			}
		}
		samples = append(samples, s)
		write = append(write, wrote.Sub(at))
		toKernel = append(toKernel, kernel.Sub(wrote))
		// kube-proxy's minSyncPeriod would hold the next one back: wait
		// it out, so that each update is a single one.
		time.Sleep(time.Until(s.syncStart.Add(*sliMinSync)))
	}
	tr.take()
	sli := make([]time.Duration, len(samples))
	for i, s := range samples {
		sli[i] = s.syncEnd.Sub(s.trigger)
	}
	phases(b, "single updates", samples)
	w50, w99 := quantiles(write)
	k50, k99 := quantiles(toKernel)
	s50, s99 := quantiles(sli)
	b.Logf("single updates: API write %v/%v, its return -> the destination in the kernel %v/%v, SLI %v/%v (p50/p99)",
		w50.Round(time.Microsecond), w99.Round(time.Microsecond), k50.Round(time.Microsecond), k99.Round(time.Microsecond),
		s50.Round(time.Microsecond), s99.Round(time.Microsecond))
	b.ReportMetric(s50.Seconds(), "single-sli-p50-s")
	b.ReportMetric(s99.Seconds(), "single-sli-p99-s")
	b.ReportMetric(k50.Seconds(), "write-kernel-p50-s")
	b.ReportMetric(k99.Seconds(), "write-kernel-p99-s")
}

// churn makes -sli.rate EndpointSlice updates a second for -sli.churn,
// each on the next Service in turn (an endpoint removed, or put back on a
// second turn), through a paced writer of several goroutines, then waits
// until every update has been applied.
func (cl *sliCluster) churn(b *testing.B, tr *sliTracer) {
	if *sliChurn <= 0 || *sliRate <= 0 {
		return
	}
	ctx := context.Background()
	jobs := make(chan int, *sliRate)
	var wg sync.WaitGroup
	var failed atomic.Int64
	var firstErr atomic.Value
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range jobs {
				i := u % cl.n
				addrs := scaleAddrs(i, 10)
				if (u/cl.n)%2 == 0 {
					addrs = addrs[:9]
				}
				if err := patchSlice(ctx, cl.c, fmt.Sprintf("svc-%d-1", i), time.Now(), addrs); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	tick := time.NewTicker(time.Second / time.Duration(*sliRate))
	start := time.Now()
	writes, missed := 0, 0
	for time.Since(start) < *sliChurn {
		<-tick.C
		select {
		case jobs <- cl.chu:
			cl.chu++
			writes++
		default:
			missed++ // the writers are behind: the rate is not kept
		}
	}
	tick.Stop()
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d writes failed, the first: %v", n, writes, firstErr.Load())
	}
	tr.waitCount(b, writes)
	samples, syncs, wholes := tr.take()
	sli := make([]time.Duration, len(samples))
	for i, s := range samples {
		sli[i] = s.syncEnd.Sub(s.trigger)
	}
	p50, p99 := quantiles(sli)
	b.Logf("churn: %d updates written in %v (%.1f a second, %d ticks missed by busy writers), %d applied in %d syncs; SLI %v/%v (p50/p99)",
		writes, elapsed.Round(time.Millisecond), float64(writes)/elapsed.Seconds(), missed, len(samples), syncs,
		p50.Round(time.Microsecond), p99.Round(time.Microsecond))
	phases(b, "churn", samples)
	behind, rest := behindWhole(samples, wholes)
	for _, w := range wholes {
		b.Logf("churn: a Sync of the whole State (the periodic resync) at +%v took %v",
			w[0].Sub(start).Round(time.Millisecond), w[1].Sub(w[0]).Round(time.Millisecond))
	}
	phases(b, "churn, the changes delivered during a whole Sync or applied by one", behind)
	phases(b, "churn, the others", rest)
	b.ReportMetric(p50.Seconds(), "churn-sli-p50-s")
	b.ReportMetric(p99.Seconds(), "churn-sli-p99-s")
	b.ReportMetric(float64(len(samples)), "churn-applied")
	b.ReportMetric(float64(syncs), "churn-syncs")
}

// patchSlice sets the endpoints of the EndpointSlice name to ready ones at
// addrs, with the last-change-trigger-time at, as the EndpointSlice
// controller writes it (a merge patch: no read first).
func patchSlice(ctx context.Context, c kubernetes.Interface, name string, at time.Time, addrs []string) error {
	body, err := json.Marshal(map[string]any{
		"metadata":  map[string]any{"annotations": map[string]string{corev1.EndpointsLastChangeTriggerTime: at.UTC().Format(time.RFC3339Nano)}},
		"endpoints": slice("", "node-b", addrs...).Endpoints,
	})
	if err != nil {
		return err
	}
	_, err = c.DiscoveryV1().EndpointSlices(testNS).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	return err
}

// apiSize lists the Services and EndpointSlices as the agent's informers
// get them and sums their sizes in JSON and in protobuf.
func apiSize(tb testing.TB, c kubernetes.Interface) (jsonBytes, protoBytes uint64, objects int) {
	tb.Helper()
	ctx := context.Background()
	add := func(o interface{ Size() int }) {
		js, err := json.Marshal(o)
		if err != nil {
			tb.Fatal(err)
		}
		jsonBytes += uint64(len(js))
		protoBytes += uint64(o.Size())
		objects++
	}
	pages(tb, func(o metav1.ListOptions) (string, error) {
		l, err := c.CoreV1().Services(metav1.NamespaceAll).List(ctx, o)
		if err != nil {
			return "", err
		}
		for i := range l.Items {
			add(&l.Items[i])
		}
		return l.Continue, nil
	})
	pages(tb, func(o metav1.ListOptions) (string, error) {
		l, err := c.DiscoveryV1().EndpointSlices(metav1.NamespaceAll).List(ctx, o)
		if err != nil {
			return "", err
		}
		for i := range l.Items {
			add(&l.Items[i])
		}
		return l.Continue, nil
	})
	return jsonBytes, protoBytes, objects
}

// pages calls list with each page's options, 5,000 objects a page, until
// it returns no continue token.
func pages(tb testing.TB, list func(metav1.ListOptions) (string, error)) {
	tb.Helper()
	opts := metav1.ListOptions{Limit: 5000}
	for {
		next, err := list(opts)
		if err != nil {
			tb.Fatal(err)
		}
		if next == "" {
			return
		}
		opts.Continue = next
	}
}

// memUse is the Go heap in use after a GC and the process's resident set
// (VmRSS) and its peak (VmHWM), in bytes; the last two are 0 where
// /proc/self/status is missing.
type memUse struct{ heap, rss, hwm uint64 }

func readMem() memUse {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	u := memUse{heap: m.HeapInuse}
	status, _ := os.ReadFile("/proc/self/status")
	for line := range bytes.Lines(status) {
		k, v, _ := bytes.Cut(line, []byte(":"))
		f := bytes.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseUint(string(f[0]), 10, 64)
		switch string(k) {
		case "VmRSS":
			u.rss = n << 10
		case "VmHWM":
			u.hwm = n << 10
		}
	}
	return u
}

func mb(n uint64) float64 { return float64(n) / (1 << 20) }
