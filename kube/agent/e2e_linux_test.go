package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vishvananda/netns"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/kube/internal/apiservertest"
	"github.com/ipvskit/ipvskit/proxier"
)

// TestAgentEndToEnd runs the agent on real kernel clients in a node
// namespace, fed by a real API server, with a client and two backends in
// namespaces of their own: traffic follows what is done through the API.
// Another program's virtual server, link and nftables table on the node
// are left alone.
func TestAgentEndToEnd(t *testing.T) {
	node, client := testutil.NewNetNS(t), testutil.NewNetNS(t)
	testutil.RequireIPVS(t, node)
	testutil.RequireDummy(t, node)
	ipvsadm := testutil.RequireTool(t, "ipvsadm")
	nodeAddr := netip.MustParseAddr("198.18.1.1")
	testutil.Veth(t, node, "to-client", netip.MustParsePrefix("198.18.1.1/24"), client, "eth0", netip.MustParsePrefix("198.18.1.2/24"))
	client.Route(t, "198.18.128.0/17", nodeAddr)
	addrs := twoBackends(t, node)
	backends := map[string]string{"b1": addrs[0], "b2": addrs[1]}

	// Another program's state on the node, set up first.
	unchanged := neighbours(t, node)
	ctx := context.Background()

	srv := apiservertest.Start(t)
	r := &rig{srv: srv, c: srv.Client(), woken: make(chan struct{}, 1), ctx: ctx}
	r.createNode(t, nodeAddr)
	r.startOn(t, node.Handle(), testNode, proxier.Config{})
	ipvsSaved := func() string { return node.Exec(t, ipvsadm, "-Sn") }

	// A ClusterIP and a NodePort Service, both on b1 and b2.
	np := service("np", "198.18.128.11", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort })
	r.create(t, service("web", "198.18.128.10"), slice("web", "node-b", backends["b1"], backends["b2"]),
		np, slice("np", "node-b", backends["b1"], backends["b2"]))
	got, err := r.c.CoreV1().Services(testNS).Get(ctx, "np", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodePort := got.Spec.Ports[0].NodePort
	web := "198.18.128.10:80"
	nodePortAddr := fmt.Sprintf("%v:%d", nodeAddr, nodePort)
	r.until(t, "web and np in IPVS with both backends", func() bool {
		s := ipvsSaved()
		return strings.Count(s, "-a -t "+web) == 2 && strings.Count(s, "-a -t "+nodePortAddr) == 2
	})
	for _, to := range []string{web, nodePortAddr} {
		if seen := askMany(t, client, to, 8); !seen["b1"] || !seen["b2"] || len(seen) != 2 {
			t.Fatalf("%s answered by %v, want b1 and b2", to, seen)
		}
	}

	// b2 removed through the API: no new connection reaches it.
	s, err := r.c.DiscoveryV1().EndpointSlices(testNS).Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Endpoints = s.Endpoints[:1]
	r.updateSlice(t, s)
	r.until(t, "b2 out of web (weight 0)", func() bool {
		return strings.Contains(ipvsSaved(), "-a -t "+web+" -r "+backends["b2"]+":8080 -m -w 0")
	})
	if seen := askMany(t, client, web, 6); len(seen) != 1 || !seen["b1"] {
		t.Fatalf("after b2 left: answered by %v, want b1 only", seen)
	}

	// web deleted through the API: gone from ipvsadm; np stays.
	if err := r.c.CoreV1().Services(testNS).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.until(t, "web gone from ipvsadm", func() bool { return !strings.Contains(ipvsSaved(), web) })
	if seen := askMany(t, client, nodePortAddr, 4); len(seen) == 0 {
		t.Fatal("np stopped answering when web was deleted")
	}

	// The health-check port of an externalTrafficPolicy Local Service
	// follows its local endpoints. (It listens in the node's namespace, on
	// every address: asked from the client on the node's.)
	hc := freeNodePort(t)
	r.create(t, service("lb", "198.18.128.20", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = int32(hc)
	}), slice("lb", "node-b", backends["b1"]))
	hcAddr := fmt.Sprintf("%v:%d", nodeAddr, hc)
	r.until(t, "lb's health check 503", func() bool { c, _ := healthCheckIn(t, client, hcAddr); return c == 503 })
	s, err = r.c.DiscoveryV1().EndpointSlices(testNS).Get(ctx, "lb-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Endpoints = append(s.Endpoints, slice("lb", testNode, backends["b2"]).Endpoints...)
	r.updateSlice(t, s)
	r.until(t, "lb's health check 200", func() bool { c, _ := healthCheckIn(t, client, hcAddr); return c == 200 })
	unchanged()
}

// startOn starts an agent named node as one "process" on the node
// namespace ns: kernel clients of its own there, its listeners there too,
// the default configuration but for /healthz and /metrics on loopback
// ports of the kernel's choosing, and p. stop stops it as SIGTERM does
// (Run returns; the node keeps serving) and closes its clients.
func (r *rig) startOn(t testing.TB, ns netns.NsHandle, node string, p proxier.Config) (stop func()) {
	t.Helper()
	k, err := OpenKernel(ns)
	if err != nil {
		t.Fatal(err)
	}
	closeKernel := sync.OnceFunc(func() { k.Close() })
	t.Cleanup(closeKernel) // after the agent's own cleanup, which stops it
	cfg := DefaultConfig()
	cfg.HealthzBindAddress, cfg.MetricsBindAddress = "127.0.0.1:0", "127.0.0.1:0"
	r.start(t, Options{Config: cfg, NodeName: node, Client: r.c, NewProxier: k.NewProxier,
		SetTimeouts: k.SetTimeouts, NodeAddresses: k.NodeAddresses, Listen: k.Listen, Proxier: p})
	stopAgent := r.stop
	return func() { stopAgent(); closeKernel() }
}

// answer serves TCP 8080 in ns: each connection gets "name".
func answer(t *testing.T, ns *testutil.NetNS, name string) {
	t.Helper()
	ns.Serve(t, "tcp", ":8080", func(c net.Conn) { fmt.Fprintln(c, name, c.RemoteAddr()) })
}

// askMany connects n times from ns to addr and returns who answered.
func askMany(t *testing.T, ns *testutil.NetNS, addr string, n int) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for range n {
		var name string
		var err error
		ns.Do(t, func() { name, _, err = request(addr, 10*time.Second) })
		if err != nil {
			t.Fatalf("connecting to %s: %v", addr, err)
		}
		seen[name] = true
	}
	return seen
}

// request connects to addr from the calling thread's namespace and reads
// the answer of a backend that answer started: its name and the client
// address it saw. timeout bounds the whole exchange.
func request(addr string, timeout time.Duration) (name string, peer netip.AddrPort, err error) {
	deadline := time.Now().Add(timeout)
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", netip.AddrPort{}, err
	}
	defer c.Close()
	c.SetDeadline(deadline)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", netip.AddrPort{}, fmt.Errorf("reading the answer of %s: %w", addr, err)
	}
	name, p, _ := strings.Cut(strings.TrimSpace(line), " ")
	peer, err = netip.ParseAddrPort(p)
	if err != nil {
		return "", netip.AddrPort{}, fmt.Errorf("the answer of %s, %q: %w", addr, line, err)
	}
	return name, peer, nil
}

// healthCheckIn asks the health-check node port at addr from ns, as a
// load balancer does: the status code and the body's localEndpoints; code
// 0 means no answer.
func healthCheckIn(t testing.TB, ns *testutil.NetNS, addr string) (code, local int) {
	t.Helper()
	ns.Do(t, func() {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		fmt.Fprintf(c, "GET / HTTP/1.0\r\nHost: %s\r\n\r\n", addr)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		var body struct {
			LocalEndpoints int `json:"localEndpoints"`
		}
		if json.NewDecoder(resp.Body).Decode(&body) == nil {
			code, local = resp.StatusCode, body.LocalEndpoints
		}
	})
	return code, local
}
