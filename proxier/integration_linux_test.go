package proxier

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/sysctl"
)

// trafficRig is a node namespace (IPVS, the VIP link) with a client namespace
// and backend namespaces routed through it:
//
//	client 198.18.10.2 --- 198.18.10.1 node 198.18.1N.1 --- 198.18.1N.2 backend N
type trafficRig struct {
	node, client *testutil.NetNS
	backends     []netip.Addr
	p            *Proxier
	ipvs         *ipvs.Client
}

func newTrafficRig(t *testing.T, nBackends int) *trafficRig {
	t.Helper()
	node := testutil.NewNetNS(t)
	testutil.RequireIPVS(t, node)
	testutil.RequireDummy(t, node)
	r := &trafficRig{node: node, client: testutil.NewNetNS(t)}
	testutil.Veth(t, node, "to-client", pfx("198.18.10.1/30"), r.client, "eth0", pfx("198.18.10.2/30"))
	r.client.Route(t, "default", a("198.18.10.1"))
	for i := 1; i <= nBackends; i++ {
		be := testutil.NewNetNS(t)
		nodeSide, beSide := fmt.Sprintf("198.18.1%d.1", i), fmt.Sprintf("198.18.1%d.2", i)
		testutil.Veth(t, node, fmt.Sprintf("to-be%d", i), pfx(nodeSide+"/30"), be, "eth0", pfx(beSide+"/30"))
		be.Route(t, "default", a(nodeSide))
		serveName(t, be, beSide+":8080", fmt.Sprintf("backend-%d", i))
		r.backends = append(r.backends, a(beSide))
	}

	var err error
	r.ipvs, err = ipvs.New(&ipvs.Config{NetNS: node.Handle()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.ipvs.Close() })
	link, err := dummy.New(&dummy.Config{NetNS: node.Handle()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.Close() })
	sys, err := sysctl.New(&sysctl.Config{NetNS: node.Handle()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Close() })
	rules, err := iptables.NewNFTables(&iptables.NFTablesConfig{NetNS: node.Handle()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rules.Close() })
	r.p, err = New(nil, Deps{IPVS: r.ipvs, Link: link, Sysctls: sys, Rules: map[Family]Rules{IPv4: rules}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// serveName answers every TCP connection to addr in ns with name.
func serveName(t *testing.T, ns *testutil.NetNS, addr, name string) {
	t.Helper()
	var (
		ln  net.Listener
		err error
	)
	ns.Do(t, func() { ln, err = net.Listen("tcp", addr) }) // the socket lives in ns from here on
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, name)
			c.Close()
		}
	}()
}

// ask connects n times from the client namespace to addr and counts who
// answered.
func (r *trafficRig) ask(t *testing.T, addr string, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		var (
			reply []byte
			err   error
		)
		r.client.Do(t, func() {
			var c net.Conn
			c, err = net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			reply, err = io.ReadAll(c)
		})
		if err != nil {
			t.Fatalf("connecting to %s: %v", addr, err)
		}
		got[string(reply)]++
	}
	return got
}

func TestIntegrationClusterIPRoundRobinAndScaleDown(t *testing.T) {
	r := newTrafficRig(t, 2)
	ctx := context.Background()
	s := State{Services: map[string]Service{"web": {
		ClusterIPs: []netip.Addr{a("198.18.100.1")},
		Ports:      []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: 8080}},
		Endpoints:  []Endpoint{{Addr: r.backends[0], Ready: true}, {Addr: r.backends[1], Ready: true}},
	}}}
	if _, err := r.p.Sync(ctx, &s); err != nil {
		t.Fatal(err)
	}
	if got := r.ask(t, "198.18.100.1:80", 6); got["backend-1"] != 3 || got["backend-2"] != 3 {
		t.Fatalf("round robin over two backends: %v", got)
	}
	saved := r.node.Exec(t, "ipvsadm", "-Sn")
	for _, want := range []string{"-A -t 198.18.100.1:80 -s rr", "-a -t 198.18.100.1:80 -r 198.18.11.2:8080 -m -w 1", "-a -t 198.18.100.1:80 -r 198.18.12.2:8080 -m -w 1"} {
		if !strings.Contains(saved, want) {
			t.Errorf("ipvsadm -Sn lacks %q:\n%s", want, saved)
		}
	}
	if got := r.node.Exec(t, "ip", "-o", "addr", "show", "dev", DefaultLinkName); !strings.Contains(got, "198.18.100.1/32") {
		t.Errorf("VIP not bound: %s", got)
	}

	// Scale down: one request, and only backend 1 answers.
	web := s.Services["web"]
	web.Endpoints = web.Endpoints[:1]
	s.Services["web"] = web
	res, err := r.p.Sync(ctx, &s)
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Plan.IPVSAdd.Len() + res.Plan.IPVSDelete.Len(); n != 1 {
		t.Errorf("scale down cost %d IPVS requests, want 1:\n%v", n, res.Plan)
	}
	if got := r.ask(t, "198.18.100.1:80", 3); got["backend-1"] != 3 {
		t.Errorf("after scale down: %v", got)
	}

	// Everything away: nothing of ours is left.
	if _, err := r.p.Sync(ctx, &State{}); err != nil {
		t.Fatal(err)
	}
	if saved := r.node.Exec(t, "ipvsadm", "-Sn"); saved != "" {
		t.Errorf("ipvs not empty:\n%s", saved)
	}
	if got := r.node.Exec(t, "ip", "-o", "addr", "show", "dev", DefaultLinkName); strings.Contains(got, "198.18.100.1") {
		t.Errorf("VIP still bound: %s", got)
	}
}
