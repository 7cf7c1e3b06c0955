package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/kube/internal/apiservertest"
	"github.com/ipvskit/ipvskit/proxier"
)

// TestCluster is a cluster of three nodes in namespaces on a bridge, each
// with a pod behind it and an agent of its own (its own Node, kernel
// clients and listeners), fed by one API server, with an external client
// on the bridge. With real traffic: a ClusterIP Service is reached from the
// pod on every node and balanced over the pods of all nodes; its NodePort
// on every node's address from the client. A LoadBalancer Service with
// externalTrafficPolicy Local answers only on the nodes with a local
// endpoint (the others refuse the connection), its pod sees the client's
// own address, and each node's health-check node port answers 200 or 503
// with its count of local endpoints, as kube-proxy's does; a node's only
// endpoint leaves and comes back. Then, under a client loop that asks
// every ClusterIP, NodePort and Local node port all the time, the agents
// restart one node at a time (each new agent adopts the node without one
// IPVS write) and the API server restarts: no request may fail. Another
// program's state on node-0 stays untouched.
func TestCluster(t *testing.T) {
	testutil.RequireIPVS(t, testutil.NewNetNS(t)) // before the API server starts
	ipvsadm := testutil.RequireTool(t, "ipvsadm")
	c := newCluster(t, 3)
	unchanged := neighbours(t, c.nodes[0].ns)
	srv := apiservertest.Start(t)
	for _, n := range c.nodes {
		n.r = &rig{srv: srv, c: srv.Client(), woken: make(chan struct{}, 1), ctx: context.Background()}
		n.r.createNodeNamed(t, n.name, n.addr, n.podCIDR)
		n.stop = n.r.startOn(t, n.ns.Handle(), n.name, proxier.Config{})
	}

	// web: a NodePort Service (so a ClusterIP too) on the pods of every
	// node; local: a LoadBalancer Service with externalTrafficPolicy Local
	// on the pods of node-0 and node-1, none on node-2.
	api := c.nodes[0].r
	api.create(t, service("web", "198.18.128.60", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }),
		c.slice("web", 0, 1, 2),
		service("local", "198.18.128.61", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}), c.slice("local", 0, 1))
	webNodePort, _ := ports(t, api, "web")
	localNodePort, hc := ports(t, api, "local")
	web := "198.18.128.60:80"
	for i, n := range c.nodes {
		local := 1
		if i == 2 {
			local = 0
		}
		nodePort, localPort := fmt.Sprintf("%v:%d", n.addr, webNodePort), fmt.Sprintf("%v:%d", n.addr, localNodePort)
		n.r.until(t, n.name+" serving web and local", func() bool {
			s := n.ns.Exec(t, ipvsadm, "-Sn")
			return strings.Count(s, "-a -t "+web+" ") == 3 && strings.Count(s, "-a -t "+nodePort+" ") == 3 &&
				strings.Contains(s, "-A -t "+localPort+" ") && strings.Count(s, "-a -t "+localPort+" ") == local
		})
	}
	every := map[string]bool{"pod-0": true, "pod-1": true, "pod-2": true}
	for _, n := range c.nodes {
		t.Logf("asking web's ClusterIP from %s and its NodePort on %s", n.podName, n.name) // for a failure's context
		if seen := askMany(t, n.pod, web, 6); !maps.Equal(seen, every) {
			t.Errorf("web's ClusterIP from %s answered by %v, want the pods of every node", n.podName, seen)
		}
		addr := fmt.Sprintf("%v:%d", n.addr, webNodePort)
		if seen := askMany(t, c.client, addr, 6); !maps.Equal(seen, every) {
			t.Errorf("web's NodePort on %s (%s) answered by %v, want the pods of every node", n.name, addr, seen)
		}
	}
	for i, n := range c.nodes {
		c.checkLocal(t, n, localNodePort, hc, i < 2)
	}

	// node-1's only endpoint of local leaves, and comes back.
	s, err := api.c.DiscoveryV1().EndpointSlices(testNS).Get(api.ctx, "local-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n1 := c.nodes[1]
	hcAddr := fmt.Sprintf("%v:%d", n1.addr, hc)
	for _, step := range []struct {
		nodes []int
		code  int
	}{{[]int{0}, 503}, {[]int{0, 1}, 200}} {
		s.Endpoints = c.slice("local", step.nodes...).Endpoints
		api.updateSlice(t, s)
		n1.r.until(t, fmt.Sprintf("node-1's health check %d with local's endpoints on %v", step.code, step.nodes), func() bool {
			code, _ := healthCheckIn(t, c.client, hcAddr)
			return code == step.code
		})
		for i, n := range c.nodes[:2] {
			c.checkLocal(t, n, localNodePort, hc, i == 0 || step.code == 200)
		}
		if s, err = api.c.DiscoveryV1().EndpointSlices(testNS).Get(api.ctx, "local-1", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Under traffic: the agents restart one node at a time, then the API
	// server restarts.
	var targets []target
	for i, n := range c.nodes {
		targets = append(targets, target{"web's ClusterIP from " + n.podName, n.pod, web},
			target{"web's NodePort on " + n.name, c.client, fmt.Sprintf("%v:%d", n.addr, webNodePort)})
		if i < 2 {
			targets = append(targets, target{"local's node port on " + n.name, c.client, fmt.Sprintf("%v:%d", n.addr, localNodePort)})
		}
	}
	loop := startClientLoop(t, "before the restarts", targets...)
	loop.answered(t)
	for i, n := range c.nodes {
		loop.next("the agent of " + n.name + " restarted")
		n.stop()
		before := n.r.syncs()
		n.stop = n.r.startOn(t, n.ns.Handle(), n.name, proxier.Config{})
		n.r.adopted(t, "the new agent of "+n.name, before)
		want := 200
		if i == 2 {
			want = 503
		}
		addr := fmt.Sprintf("%v:%d", n.addr, hc)
		n.r.until(t, fmt.Sprintf("the new agent of %s answering its health check %d", n.name, want), func() bool {
			code, _ := healthCheckIn(t, c.client, addr)
			return code == want
		})
		loop.answered(t)
	}
	loop.next("the API server restarted")
	srv.Restart(t)
	loop.answered(t)
	loop.check(t)
	unchanged()
}

// ports are the node port and health-check node port the API server gave
// the Service name's first port.
func ports(t *testing.T, r *rig, name string) (nodePort, healthCheck int) {
	t.Helper()
	s, err := r.c.CoreV1().Services(testNS).Get(r.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return int(s.Spec.Ports[0].NodePort), int(s.Spec.HealthCheckNodePort)
}

// checkLocal asks the Local Service's node port and health-check node port
// on n from the client. With a local endpoint, the health check answers
// 200 with one local endpoint, and n's own pod answers, having seen the
// client's address; without, 503 with none, and the connection is refused.
func (c *cluster) checkLocal(t *testing.T, n *clusterNode, nodePort, hc int, hasLocal bool) {
	t.Helper()
	code, local := healthCheckIn(t, c.client, fmt.Sprintf("%v:%d", n.addr, hc))
	if want, wantLocal := map[bool]int{true: 200, false: 503}[hasLocal], map[bool]int{true: 1, false: 0}[hasLocal]; code != want || local != wantLocal {
		got := fmt.Sprintf("%d with %d local endpoints", code, local)
		if code == 0 {
			got = "no answer"
		}
		t.Errorf("local's health check on %s: %s, want %d with %d", n.name, got, want, wantLocal)
	}
	addr := fmt.Sprintf("%v:%d", n.addr, nodePort)
	var name string
	var peer netip.AddrPort
	var err error
	c.client.Do(t, func() { name, peer, err = request(addr, 2*time.Second) })
	switch {
	case !hasLocal && !errors.Is(err, syscall.ECONNREFUSED):
		t.Errorf("local's node port on %s (no local endpoint): answered %q, %v; want the connection refused", n.name, name, err)
	case hasLocal && err != nil:
		t.Errorf("local's node port on %s: %v", n.name, err)
	case hasLocal && (name != n.podName || peer.Addr() != c.clientAddr):
		t.Errorf("local's node port on %s: %s answered, having seen %v; want %s, having seen the client's %v", n.name, name, peer, n.podName, c.clientAddr)
	}
}
