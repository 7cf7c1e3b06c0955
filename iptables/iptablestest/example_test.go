package iptablestest_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
)

// A unit test applies a ruleset, plays another program that deletes a set
// element, and sees the drift reported and repaired.
func ExampleFake_DropMember() {
	ctx := context.Background()
	f := iptablestest.New(iptables.IPv4)
	vip := iptables.AddrPort(netip.MustParseAddr("198.18.0.10"), iptables.TCP, 80)
	r := iptables.NewRuleset(iptables.IPv4, iptables.Options{})
	r.Add(iptables.ClusterIPSet, vip)
	if err := f.Apply(ctx, r); err != nil {
		fmt.Println(err)
		return
	}
	_ = f.DropMember(iptables.ClusterIPSet, vip)
	drift, _ := f.Check(ctx)
	fmt.Println(drift)
	_ = f.Repair(ctx)
	drift, _ = f.Check(ctx)
	fmt.Println(len(drift), f.Ruleset().Has(iptables.ClusterIPSet, vip))
	// Output:
	// [set ip ipvskit cluster-ip: 1 members missing (198.18.0.10,tcp:80)]
	// 0 true
}

// A bad ruleset is refused as the real back ends refuse it, and changes
// nothing.
func ExampleFake_Apply_invalid() {
	f := iptablestest.New(iptables.IPv4)
	r := iptables.NewRuleset(iptables.IPv4, iptables.Options{})
	r.Add(iptables.NodePortTCP, iptables.Port(0))
	fmt.Println(f.Apply(context.Background(), r))
	fmt.Println(f.Ruleset() == nil)
	// Output:
	// iptables: invalid node-port-tcp[0].Port "0": must be 1 to 65535
	// true
}
