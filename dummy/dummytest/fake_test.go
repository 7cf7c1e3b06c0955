package dummytest

import (
	"net/netip"
	"testing"

	"github.com/ipvskit/ipvskit/dummy/internal/contract"
)

// The fake meets the same expectations as dummy.Client against a kernel.
func TestFakeMeetsTheContract(t *testing.T) {
	contract.Run(t, func(t *testing.T) contract.World {
		f := New()
		return contract.World{
			Links: f,
			Foreign: func(t *testing.T, name string) {
				if err := f.AddLink(name, "bridge"); err != nil {
					t.Fatal(err)
				}
			},
			ForeignDummy: func(t *testing.T, name, alias string) {
				if err := f.AddLinkAlias(name, "dummy", alias); err != nil {
					t.Fatal(err)
				}
			},
			AddAddr: func(t *testing.T, name string, p netip.Prefix) {
				if err := f.AddAddr(name, p); err != nil {
					t.Fatal(err)
				}
			},
			AddRoute: func(t *testing.T, name string, addr netip.Addr, proto uint8) {
				if err := f.AddRoute(name, addr, proto); err != nil {
					t.Fatal(err)
				}
			},
			RouteOracle: func(t *testing.T, name string) []contract.Route {
				rs, _ := f.LinkRoutes(name)
				var out []contract.Route
				for _, r := range rs {
					out = append(out, contract.Route{Addr: r.Addr, Protocol: r.Protocol})
				}
				return out
			},
			Oracle: func(t *testing.T, name string) ([]netip.Prefix, bool) {
				ps, ok := f.LinkAddrs(name)
				if len(ps) == 0 {
					ps = nil
				}
				return ps, ok
			},
		}
	})
}
