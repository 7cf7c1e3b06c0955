package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/kube/internal/apiservertest"
	"github.com/ipvskit/ipvskit/proxier"
)

// TestAgentUpgradeAdoptsTheNode is an upgrade of the agent on a node, per
// back end: the old agent serves the node and stops (as on SIGTERM: Run
// returns, its kernel clients close, the node keeps serving); a new agent
// with the same configuration and kernel clients of its own starts over
// the old one's kernel state. Its first syncs send IPVS nothing and bind
// no VIP, the table is as the old one left it, traffic flows before,
// between and after, and the new agent then follows the API. Another
// program's state on the node (neighbours) stays untouched. The old agent
// is this build, in process, unless IPVSKIT_OLD_AGENT names another
// version's ipvskit-proxy binary (scripts/agent-at REVISION builds one):
// then that binary runs in the node's namespace as the old agent.
func TestAgentUpgradeAdoptsTheNode(t *testing.T) {
	testutil.RequireIPVS(t, testutil.NewNetNS(t)) // before the API server starts
	ipvsadm := testutil.RequireTool(t, "ipvsadm")
	srv := apiservertest.Start(t)
	r := &rig{srv: srv, c: srv.Client(), woken: make(chan struct{}, 1), ctx: context.Background()}
	nodeAddr := netip.MustParseAddr("198.18.1.1")
	r.createNode(t, nodeAddr)
	for i, backend := range []proxier.Backend{proxier.NFTables, proxier.IPTables} {
		t.Run(fmt.Sprint(backend), func(t *testing.T) {
			upgrade(t, r, ipvsadm, backend, nodeAddr, fmt.Sprintf("web%d", i), fmt.Sprintf("198.18.128.%d", 40+i))
		})
	}
}

func upgrade(t *testing.T, r *rig, ipvsadm string, backend proxier.Backend, nodeAddr netip.Addr, name, vip string) {
	node, client := testutil.NewNetNS(t), testutil.NewNetNS(t)
	testutil.RequireIPVS(t, node)
	testutil.RequireDummy(t, node)
	testutil.Veth(t, node, "to-client", netip.PrefixFrom(nodeAddr, 24), client, "eth0", netip.MustParsePrefix("198.18.1.2/24"))
	client.Route(t, "198.18.128.0/17", nodeAddr)
	addrs := twoBackends(t, node)
	ctx := context.Background()
	unchanged := neighbours(t, node)

	// agent starts one "process": its own kernel clients, its own agent.
	agent := func() func() { return r.startOn(t, node.Handle(), testNode, proxier.Config{Backend: backend}) }
	saved := func() string { return node.Exec(t, ipvsadm, "-Sn") }
	web := vip + ":80"
	serving := func(when string) {
		t.Helper()
		if seen := askMany(t, client, web, 6); !seen["b1"] || !seen["b2"] || len(seen) != 2 {
			t.Fatalf("%s: %s answered by %v, want b1 and b2", when, web, seen)
		}
	}

	old := agent
	if bin := os.Getenv(oldAgentEnv); bin != "" {
		old = func() func() { return oldAgent(t, r, node, bin, backend) }
	}
	stopOld := old()
	r.create(t, service(name, vip), slice(name, "node-b", addrs...))
	r.until(t, name+" in IPVS with both backends", func() bool { return strings.Count(saved(), "-a -t "+web) == 2 })
	serving("the old agent")
	stopOld()
	table, vips := saved(), node.Exec(t, "ip", "-o", "addr", "show", "dev", "ipvskit0")
	serving("no agent")

	before := r.syncs()
	stopNew := agent()
	defer stopNew()
	r.adopted(t, "the new agent", before)
	if got := saved(); got != table {
		t.Errorf("IPVS after the upgrade:\n%s\nwas:\n%s", got, table)
	}
	if got := node.Exec(t, "ip", "-o", "addr", "show", "dev", "ipvskit0"); got != vips {
		t.Errorf("VIPs after the upgrade:\n%s\nwere:\n%s", got, vips)
	}
	serving("the new agent")

	// The new agent is live: b2 leaves through the API, and drains.
	s, err := r.c.DiscoveryV1().EndpointSlices(testNS).Get(ctx, name+"-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Endpoints = s.Endpoints[:1]
	r.updateSlice(t, s)
	r.until(t, "b2 out of "+name+" (weight 0)", func() bool {
		return strings.Contains(saved(), "-a -t "+web+" -r "+addrs[1]+":8080 -m -w 0")
	})
	if err := r.c.CoreV1().Services(testNS).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.until(t, name+" gone", func() bool { return !strings.Contains(saved(), web) })
	unchanged()
}

// oldAgentEnv names another version's ipvskit-proxy binary to upgrade from.
const oldAgentEnv = "IPVSKIT_OLD_AGENT"

// oldAgent runs the ipvskit-proxy binary bin in node as the old agent, with
// the flags every version has, and returns what stops it as SIGTERM does
// on a node (it must exit cleanly).
func oldAgent(t *testing.T, r *rig, node *testutil.NetNS, bin string, backend proxier.Backend) func() {
	name := map[proxier.Backend]string{proxier.NFTables: "nftables", proxier.IPTables: "iptables"}[backend]
	cmd := exec.Command(bin, "--kubeconfig", apiFrom(t, r, node), "--hostname-override", testNode, "--backend", name)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	node.Start(t, cmd)
	r.poll = true
	t.Logf("old agent: %s", bin)
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		if t.Failed() {
			t.Logf("the old agent's log:\n%s", out.String())
		}
	})
	return func() {
		r.poll = false
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the old agent on SIGTERM: %v\n%s", err, out.String())
		}
	}
}

// apiFrom makes the API server reachable from a process in node, whose
// loopback is not the test's: a relay listening on node's 127.0.0.1 that
// dials the server from the test's namespace. It returns a kubeconfig
// naming the relay (the same address, so the server's certificate holds).
func apiFrom(t *testing.T, r *rig, node *testutil.NetNS) string {
	u, err := url.Parse(r.srv.Config().Host)
	if err != nil {
		t.Fatal(err)
	}
	at := node.Serve(t, "tcp", "127.0.0.1:0", func(c net.Conn) { relay(c, u.Host) })
	kc, err := os.ReadFile(r.srv.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, bytes.ReplaceAll(kc, []byte(u.Host), []byte(at.String())), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// relay copies c to and from a connection to addr until either side ends.
func relay(c net.Conn, addr string) {
	d, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer d.Close()
	go func() { io.Copy(d, c); d.Close() }()
	io.Copy(c, d)
}

// syncs is how many syncs the rig's agents have made so far.
func (r *rig) syncs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// adopted waits for the first sync after the first before (see syncs), of
// an agent started over another's kernel state, and fails t unless it
// succeeded without one IPVS request or VIP request.
func (r *rig) adopted(t *testing.T, who string, before int) {
	t.Helper()
	r.until(t, who+"'s first sync", func() bool { return r.syncs() > before })
	r.mu.Lock()
	first := r.events[before]
	r.mu.Unlock()
	if first.Err != nil {
		t.Fatalf("%s's first sync: %v", who, first.Err)
	}
	if n, a := first.Ops[proxier.SubsystemIPVS], first.Ops[proxier.SubsystemAddresses]; n != 0 || a != 0 {
		t.Errorf("%s's first sync sent %d IPVS requests and %d VIP requests, want none", who, n, a)
	}
}

// twoBackends makes b1 and b2, each in a namespace of its own routed
// through node (198.18.11.2 and 198.18.12.2), answering TCP 8080 with its
// name, and returns their addresses.
func twoBackends(t *testing.T, node *testutil.NetNS) []string {
	t.Helper()
	var addrs []string
	for i, b := range []string{"b1", "b2"} {
		ns := testutil.NewNetNS(t)
		gw := netip.AddrFrom4([4]byte{198, 18, byte(11 + i), 1})
		addr := netip.AddrFrom4([4]byte{198, 18, byte(11 + i), 2})
		testutil.Veth(t, node, "to-"+b, netip.PrefixFrom(gw, 24), ns, "eth0", netip.PrefixFrom(addr, 24))
		ns.Route(t, "0.0.0.0/0", gw)
		answer(t, ns, b)
		addrs = append(addrs, addr.String())
	}
	return addrs
}
