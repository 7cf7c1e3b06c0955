package proxier_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/netnstest"
	"github.com/ipvskit/ipvskit/proxier"
)

// A user's kernel test of a program on the Proxier, as package netnstest
// makes it: a node, a client and a backend, a ClusterIP service, real
// traffic; another program's virtual server on the node stays untouched.
func TestIntegrationNetnstestUserTest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node := netnstest.New(t)
	client := node.Peer(t, "client", netip.MustParsePrefix("198.18.0.1/24"), netip.MustParsePrefix("198.18.0.2/24"))
	backend := node.Peer(t, "backend", netip.MustParsePrefix("198.18.1.1/24"), netip.MustParsePrefix("198.18.1.2/24"))
	server := backend.ServeTCP(t, netip.MustParseAddrPort("198.18.1.2:8080"), "backend-1")

	p, err := proxier.Open(ctx, nil, node.Handle())
	if errors.Is(err, proxier.ErrNotSupported) {
		testutil.Missing(t, "IPVS and dummy links", err) // a skip on a kernel without them, a failure in the VM rig
	}
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	foreign := "-A -t 198.18.200.1:443 -s wlc\n"
	node.Run(t, "ipvsadm", "-A", "-t", "198.18.200.1:443", "-s", "wlc")
	state := &proxier.State{Services: map[string]proxier.Service{"web": {
		ClusterIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1")},
		Ports:      []proxier.Port{{Name: "http", Protocol: proxier.TCP, Port: 80, TargetPort: 8080}},
		Endpoints:  []proxier.Endpoint{{Addr: netip.MustParseAddr("198.18.1.2"), Ready: true}},
	}}}
	if _, err := p.Sync(ctx, state); err != nil {
		t.Fatal(err)
	}
	if got, err := client.DialTCP(ctx, t, netip.MustParseAddrPort("198.18.100.1:80")); err != nil || got != "backend-1" {
		t.Errorf("through the VIP: %q, %v", got, err)
	}
	if len(server.Peers()) != 1 {
		t.Errorf("the backend answered %v, want one connection", server.Peers())
	}
	if err := p.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if got := node.Run(t, "ipvsadm", "-Sn"); got != foreign {
		t.Errorf("after Cleanup, the node's IPVS table is %q, want only the other program's %q", got, foreign)
	}
}
