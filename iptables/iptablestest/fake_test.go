package iptablestest

import (
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/internal/contract"
	"github.com/ipvskit/ipvskit/proxier"
)

var (
	_ iptables.Backend = (*Fake)(nil)
	_ proxier.Rules    = (*Fake)(nil)
)

// The fake meets the same expectations as the real back ends against a
// kernel (iptables/contract_*_linux_test.go), in both families.
func TestFakeMeetsTheContract(t *testing.T) {
	for _, fam := range []iptables.Family{iptables.IPv4, iptables.IPv6} {
		t.Run(fam.String(), func(t *testing.T) {
			contract.Run(t, func(t *testing.T) contract.World { return world(New(fam), fam) })
		})
	}
}

func world(f *Fake, fam iptables.Family) contract.World {
	return contract.World{
		Backend: f,
		Family:  fam,
		Holds: func(t *testing.T, r *iptables.Ruleset) {
			t.Helper()
			got := f.Ruleset()
			if (got == nil) != (r == nil) || got != nil && !got.Equal(r) {
				t.Fatalf("the Fake holds\n%s\nwant\n%s", f.Dump(), render(r))
			}
		},
		DropMember: func(t *testing.T, s iptables.SetName, m iptables.Member) {
			if err := f.DropMember(s, m); err != nil {
				t.Fatal(err)
			}
		},
		Others: func(t *testing.T) func(t *testing.T) {
			objs := []string{"table inet ipvskit", "table ip kube-proxy", "chain nat KUBE-SERVICES"}
			for _, o := range objs {
				f.AddOther(o)
			}
			return func(t *testing.T) {
				t.Helper()
				if got := f.Others(); strings.Join(got, "|") != strings.Join(objs, "|") {
					t.Fatalf("other programs' objects = %q; want %q", got, objs)
				}
			}
		},
		Squat: func(t *testing.T) func(t *testing.T) {
			f.SetForeign("ip ipvskit")
			return func(t *testing.T) {
				t.Helper()
				if r := f.Ruleset(); r != nil {
					t.Fatalf("the Fake wrote over a foreign table:\n%s", f.Dump())
				}
			}
		},
	}
}

func render(r *iptables.Ruleset) string {
	if r == nil {
		return "(nothing)"
	}
	s, err := iptables.RenderNFT(r, "")
	if err != nil {
		return err.Error()
	}
	return s
}
