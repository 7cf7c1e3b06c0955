package agent

import (
	"context"
	"net/netip"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/ipvs"
)

// neighbours sets up another program's state on node, before an agent
// starts there: a virtual server 198.18.200.1:80 with a destination, a
// dummy link other0 with 198.18.201.1/32, and an nftables table inet other
// with a chain and a rule. The func returned fails t if any of it changed.
func neighbours(t *testing.T, node *testutil.NetNS) (unchanged func()) {
	t.Helper()
	ipvsadm := testutil.RequireTool(t, "ipvsadm")
	ic, err := ipvs.New(&ipvs.Config{NetNS: node.Handle()})
	if err != nil {
		t.Fatal(err)
	}
	defer ic.Close()
	ctx := context.Background()
	foreign := ipvs.Service{Protocol: ipvs.TCP, Addr: netip.MustParseAddr("198.18.200.1"), Port: 80, Scheduler: "wlc"}
	if err := ic.AddService(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	if err := ic.AddDestination(ctx, foreign.Key(), ipvs.Destination{Addr: netip.MustParseAddr("198.18.200.2"), Port: 80, Weight: 3}); err != nil {
		t.Fatal(err)
	}
	node.Exec(t, "ip", "link", "add", "other0", "type", "dummy")
	node.Exec(t, "ip", "addr", "add", "198.18.201.1/32", "dev", "other0")
	node.Exec(t, "nft", "add table inet other; add chain inet other keep; add rule inet other keep tcp dport 9 counter accept")
	state := func() []string {
		return []string{
			node.Exec(t, ipvsadm, "-Ln", "-t", "198.18.200.1:80"),
			node.Exec(t, "ip", "-o", "addr", "show", "dev", "other0"),
			node.Exec(t, "nft", "list", "table", "inet", "other"),
		}
	}
	before := state()
	return func() {
		t.Helper()
		for i, after := range state() {
			if after != before[i] {
				t.Errorf("another program's state changed:\n%s\nwas:\n%s", after, before[i])
			}
		}
	}
}
