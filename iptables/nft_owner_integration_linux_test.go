package iptables

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/ipvskit/ipvskit/internal/names"
	"github.com/ipvskit/ipvskit/internal/testutil"
)

// newNFTInstance is newNFT for a named instance.
func newNFTInstance(t *testing.T, ns *testutil.NetNS, f Family, instance string) *NFTablesBackend {
	t.Helper()
	return newNFTWith(t, &NFTablesConfig{NetNS: ns.Handle(), Family: f, Instance: instance})
}

// nftGen returns the ruleset generation of ns: it changes with every batch
// the kernel commits, so an equal generation proves nothing was written.
func nftGen(t *testing.T, ns *testutil.NetNS) uint32 {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(int(ns.Handle())))
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.GetGen()
	if err != nil {
		t.Fatal(err)
	}
	return g.ID
}

// nftScript applies an nft script in ns.
func nftScript(t *testing.T, ns *testutil.NetNS, script string) {
	t.Helper()
	if _, err := ns.TryExec(t, []byte(script), "nft", "-f", "-"); err != nil {
		t.Fatalf("nft -f: %v\n%s", err, script)
	}
}

// instanceListing applies RenderNFT's script for instance in a fresh
// namespace and lists the table there.
func instanceListing(t *testing.T, r *Ruleset, instance string) string {
	t.Helper()
	script, err := RenderNFT(r, instance)
	if err != nil {
		t.Fatal(err)
	}
	ns := testutil.NewNetNS(t)
	nftScript(t, ns, script)
	return listTable(t, ns, r.family(), names.Table(instance, false))
}

func wantForeign(t *testing.T, op string, err error, name string) {
	t.Helper()
	var fe *ForeignError
	if !errors.As(err, &fe) || fe.Kind != "table" || fe.Name != name || !errors.Is(err, fs.ErrExist) {
		t.Fatalf("%s: want a *ForeignError for table %s (errors.Is fs.ErrExist), got %v", op, name, err)
	}
}

// A table of our name without our mark (hand-made, or another instance's
// sets) is never written or deleted: every operation that would touch it
// returns a *ForeignError and sends nothing.
func TestIntegrationNFTablesForeignTableOfOurName(t *testing.T) {
	for _, f := range []Family{IPv4, IPv6} {
		fam, addrType := nftFamily(f)
		addr := map[Family]string{IPv4: "198.18.99.1", IPv6: "2001:db8::99"}[f]
		for name, comment := range map[string]string{"unmarked": "", "other-mark": ` comment "ipvskit:other";`} {
			t.Run(f.String()+"/"+name, func(t *testing.T) {
				ns := testutil.NewNetNS(t)
				nftScript(t, ns, "table "+fam+" ipvskit {\n\tset s { type "+addrType+";"+comment+" elements = { "+addr+" } }\n"+
					"\tchain c { type filter hook input priority 0; policy accept; "+fam+" saddr @s drop; }\n}\n")
				before := ns.Exec(t, "nft", "list", "ruleset")
				gen := nftGen(t, ns)
				b := newNFT(t, ns, f, 0)
				r := sample(f, Options{})
				tname := fam + " ipvskit"
				ctx := testCtx(t)
				wantForeign(t, "Apply", b.Apply(ctx, r), tname)
				wantForeign(t, "ApplyFull", b.ApplyFull(ctx, r), tname)
				wantForeign(t, "Repair", b.Repair(ctx), tname)
				_, err := b.Check(ctx)
				wantForeign(t, "Check", err, tname)
				got, err := b.Owned(ctx)
				wantForeign(t, "Owned", err, tname)
				if got != nil {
					t.Fatalf("Owned returned a ruleset from a foreign table: %v", got)
				}
				wantForeign(t, "Cleanup", b.Cleanup(ctx), tname)
				if err := cleanupNFTObjects(ctx, ns.Handle(), f, names.DefaultInstance, false); err != nil {
					t.Fatalf("cleanupNFTObjects of a foreign table: %v, want nil", err)
				}
				if g := nftGen(t, ns); g != gen {
					t.Fatalf("the ruleset generation went from %d to %d: something was written", gen, g)
				}
				if after := ns.Exec(t, "nft", "list", "ruleset"); after != before {
					t.Fatalf("the foreign table changed (-before +after):\n%s", lineDiff(before, after))
				}
			})
		}
	}
}

// kube-proxy's nftables-mode table is never touched by the default instance,
// through every operation.
func TestIntegrationNFTablesKubeProxyTableUntouched(t *testing.T) {
	kp, err := os.ReadFile("testdata/kube-proxy-nftables.nft")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Family{IPv4, IPv6} {
		t.Run(f.String(), func(t *testing.T) {
			ns := testutil.NewNetNS(t)
			nftScript(t, ns, string(kp))
			before := ns.Exec(t, "nft", "list", "table", "ip", "kube-proxy")
			runSteps(t, ns, newNFT(t, ns, f, 0), sample(f, Options{}), func(step string) {
				if got := ns.Exec(t, "nft", "list", "table", "ip", "kube-proxy"); got != before {
					t.Fatalf("after %s kube-proxy's table changed (-before +after):\n%s", step, lineDiff(before, got))
				}
			})
		})
	}
}

// runSteps drives b through every operation with r, checking each one's
// own result, and calls check after each.
func runSteps(t *testing.T, ns *testutil.NetNS, b *NFTablesBackend, r *Ruleset, check func(step string)) {
	t.Helper()
	ctx := testCtx(t)
	f := r.family()
	table := b.b.table.Name
	check("nothing")
	if err := b.Apply(ctx, r); err != nil {
		t.Fatalf("first Apply: %v", err)
	}
	check("the first Apply")
	vs := AddrPort(mustAddr(map[Family]string{IPv4: "198.18.0.77", IPv6: "2001:db8::77"}[f]), TCP, 8080)
	r.Add(VirtualServers, vs)
	if err := b.Apply(ctx, r); err != nil {
		t.Fatalf("incremental Apply: %v", err)
	}
	if b.LastStats().Full {
		t.Fatal("the second Apply was a full sync")
	}
	check("an incremental Apply")
	if d, err := b.Check(ctx); err != nil || len(d) != 0 {
		t.Fatalf("Check: %v %v", d, err)
	}
	check("Check")
	if err := b.Repair(ctx); err != nil {
		t.Fatalf("Repair: %v", err)
	}
	check("Repair")
	got, err := b.Owned(ctx)
	if err != nil {
		t.Fatalf("Owned: %v", err)
	}
	if got == nil || !slices.Equal(got.Members(VirtualServers), []Member{vs}) || !slices.Equal(got.Members(IPVSIPs), r.Members(IPVSIPs)) {
		t.Fatalf("Owned: got %v, want virtual servers [%v] and the ipvs-ips of the ruleset", got, vs)
	}
	check("Owned")
	if err := b.Cleanup(ctx); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	fam, _ := nftFamily(f)
	if strings.Contains(ns.Exec(t, "nft", "list", "tables"), "table "+fam+" "+table+"\n") {
		t.Fatalf("Cleanup left table %s %s", fam, table)
	}
	if got, err := b.Owned(ctx); got != nil || err != nil {
		t.Fatalf("Owned after Cleanup: %v, %v; want nil, nil", got, err)
	}
	check("Cleanup")
}

// Two instances live side by side in both families: each serves its own
// table, sees no drift, and its Cleanup leaves the other's table.
func TestIntegrationNFTablesTwoInstances(t *testing.T) {
	for _, f := range []Family{IPv4, IPv6} {
		t.Run(f.String(), func(t *testing.T) {
			ns := testutil.NewNetNS(t)
			ctx := testCtx(t)
			a, b := newNFTInstance(t, ns, f, "a"), newNFTInstance(t, ns, f, "b")
			ra, rb := sample(f, Options{}), sample(f, Options{MasqueradeAll: true})
			ra.Add(VirtualServers, ra.Members(ClusterIPSet)...)
			rb.Add(VirtualServers, rb.Members(LoadBalancer)...)
			if err := a.Apply(ctx, ra); err != nil {
				t.Fatal(err)
			}
			if err := b.Apply(ctx, rb); err != nil {
				t.Fatal(err)
			}
			for _, x := range []struct {
				name string
				b    *NFTablesBackend
				r    *Ruleset
			}{{"a", a, ra}, {"b", b, rb}} {
				if got, want := listTable(t, ns, f, x.name), instanceListing(t, x.r, x.name); got != want {
					t.Fatalf("table %s (-want +got):\n%s", x.name, lineDiff(want, got))
				}
				if d, err := x.b.Check(ctx); err != nil || len(d) != 0 {
					t.Fatalf("Check of %s: %v %v", x.name, d, err)
				}
				got, err := x.b.Owned(ctx)
				if err != nil || !slices.Equal(got.Members(VirtualServers), x.r.Members(VirtualServers)) {
					t.Fatalf("Owned of %s: %v %v", x.name, got, err)
				}
			}
			tb := listTable(t, ns, f, "b")
			if err := a.Cleanup(ctx); err != nil {
				t.Fatal(err)
			}
			if got := listTable(t, ns, f, "b"); got != tb {
				t.Fatalf("a's Cleanup changed b's table:\n%s", lineDiff(tb, got))
			}
			if d, err := b.Check(ctx); err != nil || len(d) != 0 {
				t.Fatalf("Check of b after a's Cleanup: %v %v", d, err)
			}
			if err := cleanupNFTObjects(ctx, ns.Handle(), f, "b", false); err != nil {
				t.Fatal(err)
			}
			fam, _ := nftFamily(f)
			if out := ns.Exec(t, "nft", "list", "tables"); strings.Contains(out, "table "+fam+" b\n") {
				t.Fatalf("cleanupNFTObjects left b's marked table:\n%s", out)
			}
		})
	}
}

// The iptables back end's objects are removed after the table is applied:
// a failure of that cleanup leaves the table applied, is returned, and is
// retried by the next sync (a full one), until it succeeds; then no more.
func TestIntegrationNFTablesCleanupOtherAfterSync(t *testing.T) {
	ns := testutil.NewNetNS(t)
	b := newNFT(t, ns, IPv4, 0)
	r := sample(IPv4, Options{})
	calls, fail := 0, true
	var applied []bool
	b.b.cleanupOther = func(ctx context.Context) error {
		calls++
		out := ns.Exec(t, "nft", "list", "tables")
		applied = append(applied, strings.Contains(out, "table ip "+DefaultTable+"\n"))
		if fail {
			return errors.New("injected: chain KUBE-MARK-MASQ busy")
		}
		return nil
	}
	ctx := testCtx(t)
	if err := b.Apply(ctx, r); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("the cleanup failure was not returned: %v", err)
	}
	want := scriptListing(t, r)
	if got := listTable(t, ns, IPv4, DefaultTable); got != want {
		t.Fatalf("after the failed cleanup the table is not applied (-want +got):\n%s", lineDiff(want, got))
	}
	fail = false
	if err := b.Apply(ctx, r); err != nil {
		t.Fatal(err)
	}
	if !b.LastStats().Full {
		t.Fatal("the Apply after a failed cleanup was not a full sync")
	}
	r.Add(VirtualServers, AddrPort(mustAddr("198.18.0.77"), TCP, 80))
	if err := b.Apply(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := b.ApplyFull(ctx, r); err != nil {
		t.Fatal(err)
	}
	if calls != 2 || !applied[0] || !applied[1] {
		t.Fatalf("cleanup ran %d times (want 2: the failure and its retry), table applied each time: %v", calls, applied)
	}
}
