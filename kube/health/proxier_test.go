package health

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvskit/ipvskit/proxier"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 7, 1, 12, 0, 0, 123456789, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// client never reuses connections, so a closed port is seen at once.
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

type response struct {
	code   int
	header http.Header
	body   string
}

func get(t *testing.T, url string) response {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", url, err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: string(b)}
}

// startProxyHealth serves h on a loopback port the kernel picks, stops it
// when the test ends and checks that it stopped cleanly.
func startProxyHealth(t *testing.T, h *ProxyHealth) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, h.Handler(), ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve returned %v after cancel, want nil", err)
		}
		if _, err := net.Dial("tcp", ln.Addr().String()); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial after serve returned: %v, want connection refused", err)
		}
	})
	return "http://" + ln.Addr().String()
}

const stamp = time.RFC3339Nano // encoding/json's format for time.Time

func TestProxyHealthJSONAsKubeProxy(t *testing.T) {
	clk := newFakeClock()
	var mu sync.Mutex
	var probes []string
	h := NewProxyHealth(&ProxyConfig{Timeout: 10 * time.Second, Now: clk.Now,
		Families: []proxier.Family{proxier.IPv6, proxier.IPv4},
		Probed: func(path string, code int) {
			mu.Lock()
			defer mu.Unlock()
			probes = append(probes, path+" "+http.StatusText(code))
		}})
	url := startProxyHealth(t, h)

	t1 := clk.Add(time.Second)
	h.Updated()
	t2 := clk.Add(time.Second)
	h.QueuedUpdate()
	now := clk.Add(time.Second)

	// Healthy: lastUpdated is the current time, the family's is the sync's.
	healthy := `{"lastUpdated":"` + now.Format(stamp) + `","currentTime":"` + now.Format(stamp) + `",` +
		`"nodeEligible":true,"healthy":true,"status":{` +
		`"IPv4":{"lastUpdated":"` + t1.Format(stamp) + `","healthy":true},` +
		`"IPv6":{"lastUpdated":"` + t1.Format(stamp) + `","healthy":true}}}`
	got := get(t, url+"/healthz")
	if got.code != http.StatusOK || got.body != healthy {
		t.Errorf("/healthz: %d %s\nwant 200 %s", got.code, got.body, healthy)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "X-Content-Type-Options": "nosniff"} {
		if got.header.Get(k) != v {
			t.Errorf("/healthz header %s: %q, want %q", k, got.header.Get(k), v)
		}
	}
	wantLive := strings.Replace(healthy, `"nodeEligible":true,`, "", 1)
	if got := get(t, url+"/livez"); got.code != http.StatusOK || got.body != wantLive {
		t.Errorf("/livez: %d %s\nwant 200 %s", got.code, got.body, wantLive)
	}

	// Unhealthy: the update queued at t2 waited the whole timeout;
	// lastUpdated is the last sync.
	now = clk.Add(t2.Add(10 * time.Second).Sub(now))
	unhealthy := `{"lastUpdated":"` + t1.Format(stamp) + `","currentTime":"` + now.Format(stamp) + `",` +
		`"nodeEligible":true,"healthy":false,"status":{` +
		`"IPv4":{"lastUpdated":"` + t1.Format(stamp) + `","healthy":false},` +
		`"IPv6":{"lastUpdated":"` + t1.Format(stamp) + `","healthy":false}}}`
	if got := get(t, url+"/healthz"); got.code != http.StatusServiceUnavailable || got.body != unhealthy {
		t.Errorf("/healthz: %d %s\nwant 503 %s", got.code, got.body, unhealthy)
	}
	wantLive = strings.Replace(unhealthy, `"nodeEligible":true,`, "", 1)
	if got := get(t, url+"/livez"); got.code != http.StatusServiceUnavailable || got.body != wantLive {
		t.Errorf("/livez: %d %s\nwant 503 %s", got.code, got.body, wantLive)
	}
	if got := get(t, url+"/"); got.code != http.StatusNotFound {
		t.Errorf("/: %d, want 404", got.code)
	}

	want := []string{"/healthz OK", "/livez OK", "/healthz Service Unavailable", "/livez Service Unavailable"}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, probes); diff != "" {
		t.Errorf("Probed calls (-want +got):\n%s", diff)
	}
}

func TestProxyHealthDefaultsToIPv4AndStartsUpdated(t *testing.T) {
	clk := newFakeClock()
	t0 := clk.Now()
	h := NewProxyHealth(&ProxyConfig{Now: clk.Now})
	h.QueuedUpdate()
	now := clk.Add(DefaultTimeout)
	want := `{"lastUpdated":"` + t0.Format(stamp) + `","currentTime":"` + now.Format(stamp) + `",` +
		`"nodeEligible":true,"healthy":false,"status":{"IPv4":{"lastUpdated":"` + t0.Format(stamp) + `","healthy":false}}}`
	if got := get(t, startProxyHealth(t, h)+"/healthz"); got.code != http.StatusServiceUnavailable || got.body != want {
		t.Errorf("/healthz: %d %s\nwant 503 %s", got.code, got.body, want)
	}
}

func TestProxyHealthTurnsUnhealthyExactlyAtTheTimeout(t *testing.T) {
	const timeout = 10 * time.Second
	clk := newFakeClock()
	h := NewProxyHealth(&ProxyConfig{Timeout: timeout, Now: clk.Now})

	// Nothing queued: healthy however long since the last sync.
	clk.Add(10 * timeout)
	if !h.Healthy() {
		t.Fatal("unhealthy with nothing queued")
	}

	h.QueuedUpdate()
	clk.Add(timeout / 2)
	h.QueuedUpdate() // does not restart the wait: the first update is still pending
	clk.Add(timeout/2 - time.Nanosecond)
	if !h.Healthy() {
		t.Error("unhealthy 1ns before the timeout")
	}
	clk.Add(time.Nanosecond)
	if h.Healthy() {
		t.Error("healthy when the oldest queued update has waited the timeout")
	}

	h.Updated()
	if !h.Healthy() {
		t.Error("unhealthy right after a sync")
	}
	h.QueuedUpdate()
	clk.Add(timeout - time.Nanosecond)
	if !h.Healthy() {
		t.Error("an update queued after the sync is timed from the sync, not from the first queued update")
	}
}

func TestProxyHealthNodeNotEligibleFailsHealthzOnly(t *testing.T) {
	clk := newFakeClock()
	h := NewProxyHealth(&ProxyConfig{Now: clk.Now})
	t0 := clk.Now()
	url := startProxyHealth(t, h)
	now := clk.Add(time.Minute)

	h.SyncNode(false)
	want := `{"lastUpdated":"` + t0.Format(stamp) + `","currentTime":"` + now.Format(stamp) + `",` +
		`"nodeEligible":false,"healthy":true,"status":{"IPv4":{"lastUpdated":"` + t0.Format(stamp) + `","healthy":true}}}`
	if got := get(t, url+"/healthz"); got.code != http.StatusServiceUnavailable || got.body != want {
		t.Errorf("/healthz: %d %s\nwant 503 %s", got.code, got.body, want)
	}
	if got := get(t, url+"/livez"); got.code != http.StatusOK {
		t.Errorf("/livez: %d %s, want 200", got.code, got.body)
	}
	if !h.Healthy() {
		t.Error("Healthy() false on a node that is not eligible")
	}

	h.SyncNode(true)
	if got := get(t, url+"/healthz"); got.code != http.StatusOK {
		t.Errorf("/healthz after the node is eligible again: %d %s", got.code, got.body)
	}
}

func TestNodeEligible(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"no node", nil, false},
		{"plain", &corev1.Node{}, true},
		{"other taints", &corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule},
			{Key: "DeletionCandidateOfClusterAutoscaler", Effect: corev1.TaintEffectPreferNoSchedule},
		}}}, true},
		{"being deleted", &corev1.Node{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}}, false},
		{"to be deleted by the autoscaler", &corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: "example.com/x", Effect: corev1.TaintEffectNoExecute},
			{Key: "ToBeDeletedByClusterAutoscaler", Value: "1751371200", Effect: corev1.TaintEffectNoSchedule},
		}}}, false},
	} {
		if got := NodeEligible(tc.node); got != tc.want {
			t.Errorf("%s: NodeEligible = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestServeReportsABusyAddressAndStopsOnCancel(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	h := NewProxyHealth(nil)
	err = h.Serve(context.Background(), busy.Addr().String())
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), busy.Addr().String()) {
		t.Errorf("Serve on a busy address: %v, want EADDRINUSE naming %s", err, busy.Addr())
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx, "127.0.0.1:0") }()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after cancel: %v, want nil", err)
	}
}
