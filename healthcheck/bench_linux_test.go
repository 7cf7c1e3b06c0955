package healthcheck

import (
	"bufio"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"
)

// BenchmarkFarm checks 10,000 targets spread over the farm's 400 listeners
// (TCP only, HTTP only, or half each; the last also with Config.NetNS set to
// the caller's own namespace, so that every socket comes from the namespace
// thread) every 2 s for benchRounds rounds, with the default worker pool.
// One op is one check: ns/op is the checker process's CPU time
// (user + system) per check, B/op and allocs/op its allocations per check;
// goroutines-peak is the most goroutines seen (sampled every 5 ms), checks/s
// the rate achieved, ms-late/check the mean delay of a check past its due
// time (how far the pool falls behind). Run it once:
//
//	go test -run '^$' -bench Farm -benchtime 1x ./healthcheck/
func BenchmarkFarm(b *testing.B) {
	addrs := startFarm(b)
	var tcp, http []farmAddr
	for _, a := range addrs {
		if a.kind == "http" {
			http = append(http, a)
		} else {
			tcp = append(tcp, a)
		}
	}
	b.Run("tcp", func(b *testing.B) { benchFarm(b, tcp, 0) })
	b.Run("http", func(b *testing.B) { benchFarm(b, http, 0) })
	b.Run("mixed", func(b *testing.B) { benchFarm(b, addrs, 0) })
	b.Run("mixed-netns", func(b *testing.B) {
		h, err := netns.Get()
		if err != nil {
			b.Skipf("no namespace handle: %v", err)
		}
		defer h.Close()
		benchFarm(b, addrs, h)
	})
}

func benchFarm(b *testing.B, addrs []farmAddr, ns netns.NsHandle) {
	const (
		targets     = 10000
		interval    = 2 * time.Second
		benchRounds = 5
	)
	b.ReportAllocs()
	base := runtime.NumGoroutine()
	c, err := New(&Config[int]{NetNS: ns})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	set := make(map[int]Target, targets)
	for i := range targets {
		f := addrs[i%len(addrs)]
		ck := Check{Type: TCP, Interval: interval, Timeout: time.Second, Jitter: time.Second, Rise: 2, Fall: 2}
		if f.kind == "http" {
			ck.Type, ck.HTTP = HTTP, HTTPCheck{Path: "/healthz", Body: "ok"}
		}
		set[i] = Target{Addr: f.addr, Check: ck}
	}

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if n := int64(runtime.NumGoroutine()); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()

	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime(b)
	start := time.Now()
	b.ResetTimer()
	if err := c.Replace(set); err != nil {
		b.Fatal(err)
	}
	const want = benchRounds * targets
	for c.checks.Load() < want {
		time.Sleep(10 * time.Millisecond) // pacing a measurement, not synchronising a test
	}
	wall := time.Since(start)
	cpu := cpuTime(b) - cpu0
	runtime.ReadMemStats(&ms1)
	b.StopTimer()
	close(stop)
	<-sampled

	n := float64(c.checks.Load())
	down := 0
	for i := range targets {
		if s, _ := c.State(i); s != Up {
			down++
		}
	}
	if down > 0 {
		b.Errorf("%d of %d targets not up after %d rounds", down, targets, benchRounds)
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "ns/op")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/n, "allocs/op")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/n, "B/op")
	b.ReportMetric(float64(peak.Load()), "goroutines-peak")
	b.ReportMetric(float64(base), "goroutines-before")
	b.ReportMetric(n/wall.Seconds(), "checks/s")
	b.ReportMetric(float64(c.late.Load())/n/1e6, "ms-late/check")
	b.ReportMetric(n, "checks")
}

type farmAddr struct {
	kind string
	addr netip.AddrPort
}

// startFarm starts the test binary as the server farm and returns its
// listeners; it ends when b does.
func startFarm(b *testing.B) []farmAddr {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), farmEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	var addrs []farmAddr
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if line == "ready" {
			return addrs
		}
		kind, a, _ := strings.Cut(line, " ")
		ap, err := netip.ParseAddrPort(a)
		if err != nil {
			b.Fatalf("farm said %q: %v", line, err)
		}
		addrs = append(addrs, farmAddr{kind, ap})
	}
	b.Fatalf("the farm ended before it was ready: %v", sc.Err())
	return nil
}

// cpuTime is the process's user and system time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
