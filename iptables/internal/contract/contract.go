// Package contract holds the expectations that every netfilter back end of
// package iptables (IPTablesBackend in both flavors, NFTablesBackend, against a kernel)
// and iptablestest.Fake (in memory) must meet, so that the fake keeps the
// real back ends' semantics and errors.
package contract

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/iptables"
)

// World is one fresh, empty place (a network namespace, a fake) with a back
// end working in it, and ways for a test to do what other programs do
// there and to look at it independently of the back end.
type World struct {
	// Backend is the back end under test: IPTablesBackend, NFTablesBackend or
	// iptablestest.Fake, through the interface they share.
	Backend iptables.Interface
	// Family is the family the back end applies.
	Family iptables.Family
	// Holds checks, without the back end (nft(8), iptables-save and
	// ipset(8) for a kernel), that the back end's objects hold exactly r
	// (rules and set members); r nil means none of them exist.
	Holds func(t *testing.T, r *iptables.Ruleset)
	// DropMember deletes member m of set s from the back end's objects, as
	// another program would.
	DropMember func(t *testing.T, s iptables.SetName, m iptables.Member)
	// Others makes another program's objects (tables, chains, sets, jump
	// rules), with the back end's names where that is the risk (the same
	// name in another family, kube-proxy's names, the instance's prefix);
	// the function it returns fails t if they are not exactly as made.
	// Run makes them before every expectation and checks them after it.
	Others func(t *testing.T) (untouched func(t *testing.T))
	// Squat makes an object of a name the back end writes, without its
	// ownership mark; the function it returns fails t if it changed.
	Squat func(t *testing.T) (untouched func(t *testing.T))
}

// Run runs every expectation as a subtest, each in a world from newWorld
// beside other programs' objects.
func Run(t *testing.T, newWorld func(t *testing.T) World) {
	for _, tc := range []struct {
		name string
		f    func(t *testing.T, w World)
	}{
		{"NothingBeforeTheFirstApply", nothingYet},
		{"ApplyThenOwned", applyThenOwned},
		{"IncrementalApplySendsTheDifference", incremental},
		{"InvalidRulesetChangesNothing", invalid},
		{"CheckFindsDriftAndRepairUndoesIt", driftRepair},
		{"CleanupRemovesOnlyItsOwn", cleanup},
		{"TakenNamesAreRefused", squatted},
		{"CanceledContextChangesNothing", canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			untouched := w.Others(t)
			tc.f(t, w)
			untouched(t)
		})
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// addr is the i-th test address of family f.
func addr(f iptables.Family, i int) netip.Addr {
	if f == iptables.IPv6 {
		return netip.MustParseAddr(fmt.Sprintf("2001:db8::%x", i))
	}
	return netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)})
}

// sample is a proxy's ruleset for a few services: members in most sets
// (not LBNoNodeAccess, which needs the xt_ipvs match of a kernel with
// IPVS), source networks that do not overlap, so every back end holds
// every member as given.
func sample(f iptables.Family) *iptables.Ruleset {
	local := netip.MustParsePrefix("198.19.0.0/16")
	src := []netip.Prefix{netip.MustParsePrefix("198.19.1.0/24"), netip.MustParsePrefix("198.19.2.0/24")}
	if f == iptables.IPv6 {
		local = netip.MustParsePrefix("2001:db8:100::/40")
		src = []netip.Prefix{netip.MustParsePrefix("2001:db8:1::/48"), netip.MustParsePrefix("2001:db8:2::/48")}
	}
	r := iptables.NewRuleset(f, iptables.Options{LocalMatch: iptables.LocalMatch{Mode: iptables.LocalCIDR, CIDR: local}})
	a := func(i int) netip.Addr { return addr(f, i) }
	r.Add(iptables.ClusterIPSet, iptables.AddrPort(a(1), iptables.TCP, 80), iptables.AddrPort(a(1), iptables.UDP, 53))
	r.Add(iptables.LoopBack, iptables.AddrPortAddr(a(300), iptables.TCP, 8080, a(300)))
	r.Add(iptables.ExternalIPSet, iptables.AddrPort(a(2), iptables.TCP, 443))
	r.Add(iptables.LoadBalancer, iptables.AddrPort(a(3), iptables.TCP, 80))
	r.Add(iptables.LoadBalancerFW, iptables.AddrPort(a(3), iptables.TCP, 80))
	r.Add(iptables.LoadBalancerSourceCIDR, iptables.AddrPortNet(a(3), iptables.TCP, 80, src[0]), iptables.AddrPortNet(a(3), iptables.TCP, 80, src[1]))
	r.Add(iptables.LoadBalancerSourceIP, iptables.AddrPortAddr(a(3), iptables.TCP, 80, a(3)))
	r.Add(iptables.NodePortTCP, iptables.Port(30080))
	r.Add(iptables.NodePortUDP, iptables.Port(30053))
	r.Add(iptables.HealthCheckNodePort, iptables.Port(32000))
	r.Add(iptables.IPVSIPs, iptables.Addr(a(1)), iptables.Addr(a(2)), iptables.Addr(a(3)))
	r.Add(iptables.VirtualServers, iptables.AddrPort(a(1), iptables.TCP, 80), iptables.AddrPort(a(1), iptables.UDP, 53), iptables.AddrPort(a(2), iptables.TCP, 443), iptables.AddrPort(a(3), iptables.TCP, 80))
	return r
}

// members counts the members of every set of r.
func members(r *iptables.Ruleset) int {
	n := 0
	for _, s := range iptables.Sets() {
		n += r.Len(s)
	}
	return n
}
