package agent

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ipvskit/ipvskit/kube/internal/apiservertest"
)

// BenchmarkAgentScale measures the agent on the fakes against a real API
// server holding 10,000 ClusterIP Services x 10 endpoints (made once, before
// the timer): each iteration starts a fresh agent and reports the time from
// its informers' first lists to the end of its first Sync ("first-sync-s"),
// then the time from one EndpointSlice update through the API to its
// destination in the (fake) kernel ("slice-update-s").
//
//	cd kube && IPVSKIT_TEST_APISERVER=$(../scripts/test-apiserver) \
//	  go test -run '^$' -bench AgentScale -benchtime 3x ./agent
func BenchmarkAgentScale(b *testing.B) {
	const services, endpoints = 10000, 10
	srv := apiservertest.Start(b)
	c := srv.Client()
	populate(b, c, services, endpoints)
	var first, update time.Duration
	for i := range b.N {
		r := &rig{srv: srv, c: c, woken: make(chan struct{}, 1), ctx: context.Background()}
		if i == 0 {
			r.createNode(b, nodeIP)
		}
		r.startFakes(b, testConfig())
		r.until(b, "the first sync", func() bool { return r.a.firstSyncEnd.Load() != 0 })
		first += time.Duration(r.a.firstSyncEnd.Load() - r.a.cachesSynced.Load())

		s, err := c.DiscoveryV1().EndpointSlices(testNS).Get(r.ctx, "svc-7-1", metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		added := fmt.Sprintf("198.19.255.%d", 1+i)
		s.Endpoints = append(s.Endpoints, slice("x", "node-b", added).Endpoints...)
		start := time.Now()
		if _, err := c.DiscoveryV1().EndpointSlices(testNS).Update(r.ctx, s, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		vip := scaleVIP(7).String()
		r.until(b, "the new endpoint", func() bool {
			return slices.Contains(r.dests(vip, 80), added+":8080/1")
		})
		update += time.Since(start)
		r.stop()
	}
	b.ReportMetric(first.Seconds()/float64(b.N), "first-sync-s")
	b.ReportMetric(update.Seconds()/float64(b.N), "slice-update-s")
	b.ReportMetric(0, "ns/op")
}

// scaleVIP is the i-th Service's cluster IP, from 198.18.128.0/17 past the
// API server's own kubernetes Service.
func scaleVIP(i int) netip.Addr {
	b := netip.MustParseAddr("198.18.130.0").As4()
	v := uint32(b[2])<<8 | uint32(b[3]) + uint32(i)
	return netip.AddrFrom4([4]byte{198, 18, byte(v >> 8), byte(v)})
}

// populate makes n Services with their EndpointSlices, in parallel.
func populate(tb testing.TB, c kubernetes.Interface, n, endpoints int) {
	tb.Helper()
	ctx := context.Background()
	work := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				name := fmt.Sprintf("svc-%d", i)
				if _, err := c.CoreV1().Services(testNS).Create(ctx, service(name, scaleVIP(i).String()), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
				addrs := make([]string, endpoints)
				for j := range addrs {
					k := i*endpoints + j
					addrs[j] = fmt.Sprintf("198.19.%d.%d", k/250%250, 1+k%250)
				}
				if _, err := c.DiscoveryV1().EndpointSlices(testNS).Create(ctx, slice(name, "node-b", addrs...), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		select {
		case work <- i:
		case err := <-errs:
			close(work)
			wg.Wait()
			tb.Fatal(err)
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		tb.Fatal(err)
	default:
	}
}
