package health

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

var loopback = []netip.Addr{netip.MustParseAddr("127.0.0.1")}

// freePorts returns n distinct loopback ports the kernel just handed out
// and that are free again.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func freePort(t *testing.T) int { return freePorts(t, 1)[0] }

func newServiceHealth(t *testing.T, cfg *ServiceConfig) *ServiceHealth {
	t.Helper()
	s := NewServiceHealth(cfg)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func url(port int) string { return "http://127.0.0.1:" + strconv.Itoa(port) + "/" }

// serviceBody is kube-proxy's body, byte for byte.
func serviceBody(ns, name string, n int, healthy bool) string {
	return fmt.Sprintf("{\n\t\"service\": {\n\t\t\"namespace\": %q,\n\t\t\"name\": %q\n\t},\n\t\"localEndpoints\": %d,\n\t\"serviceProxyHealthy\": %v\n}",
		ns, name, n, healthy)
}

func checkService(t *testing.T, port int, wantCode int, wantBody string, wantWeight int) {
	t.Helper()
	got := get(t, url(port))
	if got.code != wantCode || got.body != wantBody {
		t.Errorf("port %d: %d %s\nwant %d %s", port, got.code, got.body, wantCode, wantBody)
	}
	for k, v := range map[string]string{
		"Content-Type": "application/json", "X-Content-Type-Options": "nosniff",
		"X-Load-Balancing-Endpoint-Weight": strconv.Itoa(wantWeight),
	} {
		if got.header.Get(k) != v {
			t.Errorf("port %d: header %s: %q, want %q", port, k, got.header.Get(k), v)
		}
	}
}

func checkClosed(t *testing.T, port int) {
	t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err == nil {
		c.Close()
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial port %d: %v, want connection refused", port, err)
	}
}

func TestServiceHealthFollowsLocalEndpoints(t *testing.T) {
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	port := freePort(t)
	s := newServiceHealth(t, &ServiceConfig{Addrs: loopback})
	if err := s.SyncServices(map[types.NamespacedName]int{web: port}); err != nil {
		t.Fatal(err)
	}
	checkService(t, port, http.StatusServiceUnavailable, serviceBody("shop", "web", 0, true), 0)

	s.SyncEndpoints(map[types.NamespacedName]int{web: 2, {Namespace: "shop", Name: "other"}: 1})
	checkService(t, port, http.StatusOK, serviceBody("shop", "web", 2, true), 2)

	s.SyncEndpoints(map[types.NamespacedName]int{{Namespace: "shop", Name: "other"}: 1})
	checkService(t, port, http.StatusServiceUnavailable, serviceBody("shop", "web", 0, true), 0)

	s.SyncEndpoints(map[types.NamespacedName]int{web: 1})
	// An unchanged service keeps its server, and any path is answered.
	if err := s.SyncServices(map[types.NamespacedName]int{web: port}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, url(port)+"anything"); got.code != http.StatusOK || got.body != serviceBody("shop", "web", 1, true) {
		t.Errorf("/anything: %d %s", got.code, got.body)
	}
}

func TestServiceHealthFailsWhileTheProxyIsUnhealthy(t *testing.T) {
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	clk := newFakeClock()
	ph := NewProxyHealth(&ProxyConfig{Timeout: time.Minute, Now: clk.Now})
	port := freePort(t)
	s := newServiceHealth(t, &ServiceConfig{Addrs: loopback, Proxy: ph})
	if err := s.SyncServices(map[types.NamespacedName]int{web: port}); err != nil {
		t.Fatal(err)
	}
	s.SyncEndpoints(map[types.NamespacedName]int{web: 3})
	checkService(t, port, http.StatusOK, serviceBody("shop", "web", 3, true), 3)

	ph.QueuedUpdate()
	clk.Add(time.Minute)
	checkService(t, port, http.StatusServiceUnavailable, serviceBody("shop", "web", 3, false), 3)

	// A node about to be deleted fails /healthz, not the services.
	ph.Updated()
	ph.SyncNode(false)
	checkService(t, port, http.StatusOK, serviceBody("shop", "web", 3, true), 3)
}

func TestServiceHealthClosesPortsOfServicesGoneOrMoved(t *testing.T) {
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}
	ports := freePorts(t, 3)
	pa, pb, pb2 := ports[0], ports[1], ports[2]
	s := newServiceHealth(t, &ServiceConfig{Addrs: loopback})
	if err := s.SyncServices(map[types.NamespacedName]int{a: pa, b: pb}); err != nil {
		t.Fatal(err)
	}
	s.SyncEndpoints(map[types.NamespacedName]int{a: 1, b: 1})
	checkService(t, pa, http.StatusOK, serviceBody("ns", "a", 1, true), 1)
	checkService(t, pb, http.StatusOK, serviceBody("ns", "b", 1, true), 1)

	// a leaves, b moves to another port.
	if err := s.SyncServices(map[types.NamespacedName]int{b: pb2}); err != nil {
		t.Fatal(err)
	}
	checkClosed(t, pa)
	checkClosed(t, pb)
	checkService(t, pb2, http.StatusOK, serviceBody("ns", "b", 1, true), 1)

	// A port freed by one service can be taken by another in one sync.
	if err := s.SyncServices(map[types.NamespacedName]int{a: pb2}); err != nil {
		t.Fatal(err)
	}
	checkService(t, pb2, http.StatusOK, serviceBody("ns", "a", 1, true), 1)

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkClosed(t, pb2)
	if err := s.SyncServices(map[types.NamespacedName]int{a: pa}); !errors.Is(err, net.ErrClosed) {
		t.Errorf("SyncServices after Close: %v, want net.ErrClosed", err)
	}
	checkClosed(t, pa)
}

func TestServiceHealthReportsAPortItCannotOpenAndServesTheOthers(t *testing.T) {
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}
	c := types.NamespacedName{Namespace: "ns", Name: "c"}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pBusy, pb := busy.Addr().(*net.TCPAddr).Port, freePort(t)
	s := newServiceHealth(t, &ServiceConfig{Addrs: loopback})
	s.SyncEndpoints(map[types.NamespacedName]int{a: 1, b: 1})

	want := map[types.NamespacedName]int{a: pBusy, b: pb, c: 70000}
	err = s.SyncServices(want)
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("SyncServices with a busy port: %v, want EADDRINUSE", err)
	}
	for _, s := range []string{"service ns/a: health-check port " + strconv.Itoa(pBusy), "service ns/c: health-check port 70000: port out of range"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("SyncServices error %q does not say %q", err, s)
		}
	}
	if err != nil && strings.Contains(err.Error(), "ns/b") {
		t.Errorf("SyncServices error %q names ns/b, which opened", err)
	}
	checkService(t, pb, http.StatusOK, serviceBody("ns", "b", 1, true), 1)

	// The next sync tries again.
	busy.Close()
	if err := s.SyncServices(want); err == nil || strings.Contains(err.Error(), "ns/a") {
		t.Errorf("SyncServices once the port is free: %v, want only ns/c's error", err)
	}
	checkService(t, pBusy, http.StatusOK, serviceBody("ns", "a", 1, true), 1)
	checkService(t, pb, http.StatusOK, serviceBody("ns", "b", 1, true), 1)
}

func TestServiceHealthListensOnEveryAddress(t *testing.T) {
	// 127.0.0.2 is loopback too on Linux, which routes all of 127/8 to lo.
	addrs := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")}
	if ln, err := net.Listen("tcp", "127.0.0.2:0"); err != nil {
		t.Skipf("no 127.0.0.2: %v", err)
	} else {
		ln.Close()
	}
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	port := freePort(t)
	s := newServiceHealth(t, &ServiceConfig{Addrs: addrs})
	if err := s.SyncServices(map[types.NamespacedName]int{web: port}); err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		u := "http://" + netip.AddrPortFrom(a, uint16(port)).String() + "/"
		if got := get(t, u); got.code != http.StatusServiceUnavailable || got.body != serviceBody("shop", "web", 0, true) {
			t.Errorf("%s: %d %s", u, got.code, got.body)
		}
	}
	// 127.0.0.3 is not listened on.
	if c, err := net.Dial("tcp", "127.0.0.3:"+strconv.Itoa(port)); err == nil {
		c.Close()
		t.Errorf("port %d answers on 127.0.0.3, which is not in Addrs", port)
	}
}

func TestServiceHealthListensThroughListen(t *testing.T) {
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	port := freePort(t)
	var asked []string
	listen := func(network, address string) (net.Listener, error) {
		asked = append(asked, network+" "+address)
		return net.Listen(network, address)
	}
	s := newServiceHealth(t, &ServiceConfig{Addrs: loopback, Listen: listen})
	if err := s.SyncServices(map[types.NamespacedName]int{web: port}); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("tcp 127.0.0.1:%d", port); len(asked) != 1 || asked[0] != want {
		t.Errorf("Listen was asked for %q, want [%s]", asked, want)
	}
	checkService(t, port, http.StatusServiceUnavailable, serviceBody("shop", "web", 0, true), 0)
}
