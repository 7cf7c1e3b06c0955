package agent

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
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

// scaleVIP is the i-th Service's cluster IP: from 198.18.2.0 on (clear of
// the nodes' 198.18.0.x and 198.18.1.x), in scaleCIDR and then in the API
// server's own 198.18.128.0/17, skipping what the API server does not
// allocate (198.18.127.255 and 198.18.255.255, broadcast addresses) and
// 198.18.128.0/24, where its kubernetes Service is: room for 65,000.
func scaleVIP(i int) netip.Addr {
	v := 2<<8 + i
	if v >= 127<<8|255 {
		v += 1 + 1<<8
	}
	if v >= 0xffff {
		panic(fmt.Sprintf("scaleVIP(%d): past 198.18.255.254", i))
	}
	return netip.AddrFrom4([4]byte{198, 18, byte(v >> 8), byte(v)})
}

// scaleCIDR is the Service CIDR populate adds beside the API server's own
// (--service-cluster-ip-range 198.18.128.0/17, 32,768 addresses) so that
// 50,000 cluster IPs fit. The API server allocates from it at once: with
// no controller manager to mark it, a ServiceCIDR counts as ready.
const scaleCIDR = "198.18.0.0/17"

// scaleAddrs are the i-th Service's endpoint addresses, in 198.19.0.0/16
// below 198.19.250.0 (repeating past 62,500 endpoints).
func scaleAddrs(i, endpoints int) []string {
	addrs := make([]string, endpoints)
	for j := range addrs {
		k := i*endpoints + j
		addrs[j] = fmt.Sprintf("198.19.%d.%d", k/250%250, 1+k%250)
	}
	return addrs
}

// addScaleCIDR creates scaleCIDR and waits until the API server takes
// cluster IPs from it, checking (dry run) those of scaleVIP around its
// edges, so that a misfit fails now rather than deep into populate.
func addScaleCIDR(tb testing.TB, c kubernetes.Interface) {
	tb.Helper()
	ctx := context.Background()
	cidr := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "scale"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{scaleCIDR}}}
	if _, err := c.NetworkingV1().ServiceCIDRs().Create(ctx, cidr, metav1.CreateOptions{}); err != nil {
		tb.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for _, i := range []int{0, 32252, 32253, 32254, 60000} {
		probe := service("scale-cidr-probe", scaleVIP(i).String())
		for {
			_, err := c.CoreV1().Services(testNS).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				tb.Fatalf("cluster IP %v (scaleVIP(%d)): %v", scaleVIP(i), i, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// populate makes n Services with their EndpointSlices, in parallel.
func populate(tb testing.TB, c kubernetes.Interface, n, endpoints int) {
	tb.Helper()
	ctx := context.Background()
	addScaleCIDR(tb, c)
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
				if _, err := c.DiscoveryV1().EndpointSlices(testNS).Create(ctx, slice(name, "node-b", scaleAddrs(i, endpoints)...), metav1.CreateOptions{}); err != nil {
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
