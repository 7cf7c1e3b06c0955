package iptablestest

import (
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/internal/contract"
	"github.com/ipvskit/ipvskit/proxier"
)

// The proxier takes the Fake for its Rules (fake.go asserts
// iptables.Interface, of which proxier.Rules is an alias).
var _ proxier.Rules = (*Fake)(nil)

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

// What the contract does not reach: a member another program added, drift
// set by the test, and the iptables rendering.
func TestFakeExtraMemberAndSetDrift(t *testing.T) {
	ctx := t.Context()
	f := New(iptables.IPv4)
	if err := f.AddMember(iptables.NodePortTCP, iptables.Port(30001)); err == nil {
		t.Fatal("AddMember before any Apply succeeded")
	}
	r := iptables.NewRuleset(iptables.IPv4, iptables.Options{})
	r.Add(iptables.NodePortTCP, iptables.Port(30000))
	if err := f.Apply(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := f.AddMember(iptables.NodePortTCP, iptables.Port(30001)); err != nil {
		t.Fatal(err)
	}
	injected := iptables.ObjectDrift{Object: "jump nat PREROUTING -> IPVSKIT-SERVICES", Problem: "missing"}
	f.SetDrift(injected)
	ds, err := f.Check(ctx)
	if err != nil || len(ds) != 2 || ds[0].Extra != 1 || ds[0].Missing != 0 || ds[0].Object != "set ip ipvskit node-port-tcp" || ds[1] != injected {
		t.Fatalf("Check = %v, %v; want one extra member of node-port-tcp, then the injected drift", ds, err)
	}
	if err := f.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	if ds, err := f.Check(ctx); len(ds) != 0 || err != nil {
		t.Fatalf("Check after Repair = %v, %v", ds, err)
	}
	want, err := iptables.RenderIPTables(r, nil)
	if err != nil || f.DumpIPTables() != want {
		t.Fatalf("DumpIPTables = %q; want RenderIPTables' %q (%v)", f.DumpIPTables(), want, err)
	}
}
