package agent

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/kube/internal/apiservertest"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

const (
	testNode = "node-a"
	testNS   = "default"
)

var nodeIP = netip.MustParseAddr("198.18.0.10")

// rig is an agent on the fakes, fed by a real API server.
type rig struct {
	srv   *apiservertest.Server
	c     kubernetes.Interface
	ipvs  *ipvstest.Fake
	a     *Agent
	ctx   context.Context
	woken chan struct{} // a sync ended
	stop  func()        // stops the agent and waits for Run
	poll  bool          // until also checks every 100 ms: the agent is another process
	// prepare, if set, is called with the agent between New and Run;
	// wrapIPVS, if set, wraps the fake IPVS startFakes gives the Proxier.
	prepare  func(*Agent)
	wrapIPVS func(proxier.IPVS) proxier.IPVS

	mu         sync.Mutex
	events     []*proxier.SyncEvent
	reconciles []*proxier.ReconcileEvent
}

func newRig(t *testing.T, cfg *Config) *rig {
	t.Helper()
	srv := apiservertest.Start(t)
	r := &rig{srv: srv, c: srv.Client(), woken: make(chan struct{}, 1), ctx: context.Background()}
	r.createNode(t, nodeIP)
	r.startFakes(t, cfg)
	return r
}

// startFakes starts an agent on fresh fakes.
func (r *rig) startFakes(t testing.TB, cfg *Config) {
	t.Helper()
	r.ipvs = ipvstest.New()
	var dep proxier.IPVS = r.ipvs
	if r.wrapIPVS != nil {
		dep = r.wrapIPVS(dep)
	}
	newProxier := func(cfg *proxier.Config) (*proxier.Proxier, error) {
		return proxier.New(cfg, proxier.Deps{IPVS: dep, Link: dummytest.New(), Sysctls: sysctltest.New(sysctltest.DefaultRelease),
			Rules: map[proxier.Family]proxier.Rules{proxier.IPv4: iptablestest.New(iptables.IPv4)}})
	}
	r.start(t, Options{
		Config: cfg, NodeName: testNode, Client: r.c, NewProxier: newProxier,
		NodeAddresses: func() ([]netip.Addr, error) { return []netip.Addr{nodeIP, netip.MustParseAddr("127.0.0.1")}, nil },
	})
}

// start runs an agent with o until the test ends, recording its syncs.
func (r *rig) start(t testing.TB, o Options) {
	t.Helper()
	o.Proxier.Observer = proxier.ObserverFunc(func(e proxier.Event) {
		r.mu.Lock()
		defer r.mu.Unlock()
		switch e := e.(type) {
		case *proxier.SyncEvent:
			r.events = append(r.events, e)
		case *proxier.ReconcileEvent:
			r.reconciles = append(r.reconciles, e)
		}
	})
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	r.a = a
	if r.prepare != nil {
		r.prepare(a)
	}
	a.afterSync = func() {
		select {
		case r.woken <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(r.stop)
}

// testConfig serves /healthz and /metrics on loopback ports of the
// kernel's choosing, and health-check ports on loopback.
func testConfig() *Config {
	c := DefaultConfig()
	c.HealthzBindAddress = "127.0.0.1:0"
	c.MetricsBindAddress = "127.0.0.1:0"
	c.NodePortAddresses = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	return c
}

func (r *rig) createNode(t testing.TB, ip netip.Addr) {
	t.Helper()
	r.createNodeNamed(t, testNode, ip, netip.Prefix{})
}

// createNodeNamed creates the Node name with the InternalIP ip and, if
// valid, the pod CIDR podCIDR.
func (r *rig) createNodeNamed(t testing.TB, name string, ip netip.Addr, podCIDR netip.Prefix) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip.String()}}}}
	if podCIDR.IsValid() {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = podCIDR.String(), []string{podCIDR.String()}
	}
	if _, err := r.c.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// patience bounds until's wait: client-go's reflectors retry a broken
// watch with a backoff of up to 30 s plus as much jitter, and under the VM
// rig's emulation the API server itself takes tens of seconds to come back.
const patience = 3 * time.Minute

// until waits for the agent's work to satisfy ok: it checks now and after
// each sync (or, with poll, every 100 ms), for at most patience.
func (r *rig) until(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.After(patience)
	var tick <-chan time.Time
	if r.poll {
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		tick = tk.C
	}
	for !ok() {
		select {
		case <-r.woken:
		case <-tick:
		case <-deadline:
			dump := ""
			if r.ipvs != nil {
				dump = "; IPVS:\n" + r.ipvs.Dump()
			}
			t.Fatalf("%s: not after %v%s", what, patience, dump)
		}
	}
}

// dests are the destinations of the virtual server addr:port, "ip:port/weight".
func (r *rig) dests(addr string, port uint16) []string {
	snap, _ := r.ipvs.Snapshot(context.Background())
	for _, s := range snap.Services {
		if s.Addr == netip.MustParseAddr(addr) && s.Port == port {
			out := []string{}
			for _, d := range s.Destinations {
				out = append(out, fmt.Sprintf("%v:%d/%d", d.Addr, d.Port, d.Weight))
			}
			slices.Sort(out)
			return out
		}
	}
	return nil
}

func (r *rig) service(addr string, port uint16) (ipvs.Service, bool) {
	snap, _ := r.ipvs.Snapshot(context.Background())
	for _, s := range snap.Services {
		if s.Addr == netip.MustParseAddr(addr) && s.Port == port {
			return s.Service, true
		}
	}
	return ipvs.Service{}, false
}

func service(name, ip string, mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
		Spec: corev1.ServiceSpec{ClusterIP: ip, ClusterIPs: []string{ip},
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	for _, m := range mutate {
		m(s)
	}
	return s
}

// slice is name's EndpointSlice: ready endpoints at addrs, on node.
func slice(name, node string, addrs ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-1", Namespace: testNS, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080)}},
	}
	for _, a := range addrs {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, NodeName: ptr.To(node)})
	}
	return s
}

func (r *rig) create(t *testing.T, objs ...any) {
	t.Helper()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Service:
			_, err = r.c.CoreV1().Services(testNS).Create(r.ctx, o, metav1.CreateOptions{})
		case *discoveryv1.EndpointSlice:
			_, err = r.c.DiscoveryV1().EndpointSlices(testNS).Create(r.ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func (r *rig) updateSlice(t *testing.T, s *discoveryv1.EndpointSlice) {
	t.Helper()
	if _, err := r.c.DiscoveryV1().EndpointSlices(testNS).Update(r.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestAgentFollowsTheAPIServer(t *testing.T) {
	r := newRig(t, testConfig())
	r.create(t, service("web", "198.18.128.10"), slice("web", "node-b", "198.19.0.1", "198.19.0.2"))
	r.until(t, "web's two endpoints", func() bool {
		return slices.Equal(r.dests("198.18.128.10", 80), []string{"198.19.0.1:8080/1", "198.19.0.2:8080/1"})
	})

	// An endpoint removed through the API gets no new connections: it
	// drains (weight 0) and Drain deletes it once idle.
	s, err := r.c.DiscoveryV1().EndpointSlices(testNS).Get(r.ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Endpoints = s.Endpoints[:1]
	r.updateSlice(t, s)
	r.until(t, "198.19.0.2 draining", func() bool {
		return slices.Equal(r.dests("198.18.128.10", 80), []string{"198.19.0.1:8080/1", "198.19.0.2:8080/0"})
	})

	// A scheduler chosen per Service, by annotation.
	r.create(t, service("hash", "198.18.128.11", func(s *corev1.Service) {
		s.Annotations = map[string]string{AnnotationScheduler: "mh", AnnotationSchedulerFlags: "mh-fallback,mh-port"}
	}), slice("hash", "node-b", "198.19.0.3"))
	r.until(t, "hash's virtual server with mh", func() bool {
		v, ok := r.service("198.18.128.11", 80)
		return ok && v.Scheduler == "mh" && v.SchedFlags == ipvs.MHFallback|ipvs.MHPort
	})

	// A Service deleted through the API disappears.
	if err := r.c.CoreV1().Services(testNS).Delete(r.ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.until(t, "web gone", func() bool { _, ok := r.service("198.18.128.10", 80); return !ok })
	if _, ok := r.service("198.18.128.11", 80); !ok {
		t.Fatal("deleting web took hash too")
	}

	// /healthz is kube-proxy's, and healthy.
	code, body := get(t, "http://"+r.a.rep.bound["healthzBindAddress"]+"/healthz")
	if code != 200 || !strings.Contains(body, `"nodeEligible":true`) {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	code, body = get(t, "http://"+r.a.rep.bound["metricsBindAddress"]+"/metrics")
	if code != 200 || !strings.Contains(body, "kubeproxy_sync_proxy_rules_duration_seconds") {
		t.Fatalf("/metrics: %d, no kubeproxy_sync_proxy_rules_duration_seconds", code)
	}
}

func TestAgentServesHealthCheckNodePorts(t *testing.T) {
	r := newRig(t, testConfig())
	port := freeNodePort(t)
	lb := service("lb", "198.18.128.20", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = int32(port)
	})
	r.create(t, lb, slice("lb", "node-b", "198.19.0.5"))
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	r.until(t, "lb's health check answering 503 (no local endpoint)", func() bool {
		code, _ := tryGet(url)
		return code == 503
	})
	s, err := r.c.DiscoveryV1().EndpointSlices(testNS).Get(r.ctx, "lb-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Endpoints = append(s.Endpoints, slice("lb", testNode, "198.19.0.6").Endpoints...)
	r.updateSlice(t, s)
	r.until(t, "lb's health check answering 200 (one local endpoint)", func() bool {
		code, body := tryGet(url)
		return code == 200 && strings.Contains(body, `"localEndpoints": 1`)
	})
	s, _ = r.c.DiscoveryV1().EndpointSlices(testNS).Get(r.ctx, "lb-1", metav1.GetOptions{})
	s.Endpoints = s.Endpoints[:1]
	r.updateSlice(t, s)
	r.until(t, "lb's health check answering 503 again", func() bool {
		code, _ := tryGet(url)
		return code == 503
	})
	if err := r.c.CoreV1().Services(testNS).Delete(r.ctx, "lb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.until(t, "lb's health-check port closed", func() bool {
		code, _ := tryGet(url)
		return code == 0
	})
}

func TestAgentCatchesUpAfterTheAPIServerRestarts(t *testing.T) {
	cfg := testConfig()
	// No periodic sync in the count below: under emulation a restart of the
	// API server takes longer than the default 30 s.
	cfg.SyncPeriod = time.Hour
	r := newRig(t, cfg)
	r.create(t, service("a", "198.18.128.30"), slice("a", "node-b", "198.19.0.7"))
	r.until(t, "a served", func() bool { return len(r.dests("198.18.128.30", 80)) == 1 })

	r.srv.Stop(t)
	// While the API server is down the node keeps serving what it had.
	r.srv.Start(t)
	r.mu.Lock()
	before := len(r.events)
	r.mu.Unlock()
	r.create(t, service("b", "198.18.128.31"), slice("b", "node-b", "198.19.0.8"))
	r.until(t, "b served after the restart", func() bool { return len(r.dests("198.18.128.31", 80)) == 1 })
	if got := r.dests("198.18.128.30", 80); !slices.Equal(got, []string{"198.19.0.7:8080/1"}) {
		t.Fatalf("a after the restart: %v", got)
	}
	// No resync storm: the informers' relist hands back the same objects,
	// which change nothing; the syncs since are those of b's two objects.
	r.mu.Lock()
	since := r.events[before:]
	r.mu.Unlock()
	syncs, writes := len(since), 0
	for _, e := range since {
		writes += e.Ops[proxier.SubsystemIPVS]
	}
	if syncs > 3 {
		t.Errorf("%d syncs after the restart, want at most 3 (b's Service and slice)", syncs)
	}
	if writes > 2 {
		t.Errorf("%d IPVS requests after the restart, want b's virtual server and destination only", writes)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	code, body := tryGet(url)
	if code == 0 {
		t.Fatalf("GET %s: %s", url, body)
	}
	return code, body
}

// tryGet is GET url without keep-alive; code 0 means no answer.
func tryGet(url string) (int, string) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// freeNodePort is a port in the node-port range that 127.0.0.1 has free.
func freeNodePort(t *testing.T) int {
	t.Helper()
	for p := 32000; p < 32767; p++ {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			l.Close()
			return p
		}
	}
	t.Fatal("no free port in 32000-32766 on 127.0.0.1")
	return 0
}
