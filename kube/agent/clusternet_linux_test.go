package agent

import (
	"fmt"
	"net/netip"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// cluster is TestCluster's network: a switch namespace whose bridge br0
// joins the nodes (198.18.0.11, .12, ...) and an external client
// (198.18.0.100) on 198.18.0.0/24; behind each node a pod in a namespace
// of its own, in the node's pod CIDR (node i's is 198.18.(20+i).0/24),
// answering TCP 8080 with its name and the client address it saw; and on
// each node a route to every other node's pod CIDR through that node.
type cluster struct {
	client     *testutil.NetNS
	clientAddr netip.Addr
	nodes      []*clusterNode
}

// clusterNode is a node of the cluster.
type clusterNode struct {
	name    string // its Node's, and its agent's NodeName
	ns      *testutil.NetNS
	addr    netip.Addr // on the bridge
	podCIDR netip.Prefix
	pod     *testutil.NetNS // the pod named "pod-" + the node's number
	podName string
	podAddr netip.Addr
	r       *rig   // its agent's
	stop    func() // stops its agent
}

func newCluster(t *testing.T, n int) *cluster {
	t.Helper()
	sw := testutil.NewNetNS(t)
	sw.Exec(t, "ip", "link", "add", "br0", "up", "type", "bridge")
	c := &cluster{client: testutil.NewNetNS(t), clientAddr: netip.MustParseAddr("198.18.0.100")}
	plug(t, sw, "client", c.client, netip.PrefixFrom(c.clientAddr, 24))
	for i := range n {
		node := &clusterNode{
			name: fmt.Sprintf("node-%d", i), ns: testutil.NewNetNS(t), pod: testutil.NewNetNS(t),
			addr:    netip.AddrFrom4([4]byte{198, 18, 0, byte(11 + i)}),
			podCIDR: netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(20 + i), 0}), 24),
			podName: fmt.Sprintf("pod-%d", i), podAddr: netip.AddrFrom4([4]byte{198, 18, byte(20 + i), 2}),
		}
		plug(t, sw, fmt.Sprintf("node%d", i), node.ns, netip.PrefixFrom(node.addr, 24))
		gw := netip.AddrFrom4([4]byte{198, 18, byte(20 + i), 1})
		testutil.Veth(t, node.ns, "pod0", netip.PrefixFrom(gw, 24), node.pod, "eth0", netip.PrefixFrom(node.podAddr, 24))
		node.pod.Route(t, "0.0.0.0/0", gw)
		answer(t, node.pod, node.podName)
		c.nodes = append(c.nodes, node)
	}
	for _, a := range c.nodes {
		for _, b := range c.nodes {
			if a != b {
				a.ns.Route(t, b.podCIDR.String(), b.addr)
			}
		}
	}
	return c
}

// plug joins ns to sw's bridge br0 by a veth pair: port in sw, eth0 with
// addr in ns, both up.
func plug(t *testing.T, sw *testutil.NetNS, port string, ns *testutil.NetNS, addr netip.Prefix) {
	t.Helper()
	sw.Exec(t, "ip", "link", "add", port, "master", "br0", "up", "type", "veth", "peer", "name", "eth0", "netns", ns.Path())
	ns.Exec(t, "ip", "addr", "add", addr.String(), "dev", "eth0")
	ns.Exec(t, "ip", "link", "set", "eth0", "up")
}

// slice is name's EndpointSlice: the pods of the nodes numbered, each a
// ready endpoint on its node.
func (c *cluster) slice(name string, nodes ...int) *discoveryv1.EndpointSlice {
	s := slice(name, "")
	for _, i := range nodes {
		n := c.nodes[i]
		s.Endpoints = append(s.Endpoints, slice(name, n.name, n.podAddr.String()).Endpoints...)
	}
	return s
}
