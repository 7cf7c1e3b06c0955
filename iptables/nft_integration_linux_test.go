package iptables

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/ipvskit/ipvskit/internal/testutil"
)

func newNFT(t *testing.T, ns *testutil.NetNS, f Family, maxBatch int) *NFTablesBackend {
	t.Helper()
	return newNFTWith(t, &NFTablesConfig{NetNS: ns.Handle(), Family: f, MaxBatchElements: maxBatch})
}

// newNFTWith opens the back end for cfg, closed when t ends; a kernel
// without nf_tables skips t.
func newNFTWith(t *testing.T, cfg *NFTablesConfig) *NFTablesBackend {
	t.Helper()
	b, err := NewNFTables(cfg)
	if errors.Is(err, ErrNotSupported) {
		testutil.Missing(t, "nf_tables", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// The Go-applied table lists exactly like the rendered script applied by nft.
func TestIntegrationNFTablesMatchesScript(t *testing.T) {
	for _, f := range []Family{IPv4, IPv6} {
		for name, o := range optionCases(f) {
			t.Run(f.String()+"/"+name, func(t *testing.T) {
				t.Parallel() // each case has its own namespace
				r := sample(f, o)
				ns := testutil.NewNetNS(t)
				b := newNFT(t, ns, f, 0)
				if err := b.Apply(testCtx(t), r); err != nil {
					t.Fatal(err)
				}
				got := listTable(t, ns, f, DefaultTable)
				if want := scriptListing(t, r); got != want {
					t.Fatalf("Go-applied table differs from nft -f of the script (-want +got):\n%s", lineDiff(want, got))
				}
				// Idempotent: a second Apply sends nothing and changes nothing.
				if err := b.Apply(testCtx(t), r); err != nil {
					t.Fatal(err)
				}
				if again := listTable(t, ns, f, DefaultTable); again != got {
					t.Fatal("a second Apply of the same ruleset changed the table")
				}
			})
		}
	}
}

// After any sequence of incremental syncs (in small batches) the table equals
// a fresh full sync of the final ruleset.
func TestIntegrationNFTablesIncrementalProperty(t *testing.T) {
	for _, f := range []Family{IPv4, IPv6} {
		t.Run(f.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(f)))
			ns := testutil.NewNetNS(t)
			b := newNFT(t, ns, f, 3)
			r := sample(f, Options{})
			if err := b.Apply(testCtx(t), r); err != nil {
				t.Fatal(err)
			}
			for i := range 25 {
				mutate(rng, r)
				if err := b.Apply(testCtx(t), r); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			got := listTable(t, ns, f, DefaultTable)
			fresh := testutil.NewNetNS(t)
			if err := newNFT(t, fresh, f, 0).ApplyFull(testCtx(t), r); err != nil {
				t.Fatal(err)
			}
			if want := listTable(t, fresh, f, DefaultTable); got != want {
				t.Fatalf("after incremental syncs (-full +incremental):\n%s", lineDiff(want, got))
			}
			if want := scriptListing(t, r); got != want {
				t.Fatalf("after incremental syncs (-script +incremental):\n%s", lineDiff(want, got))
			}
		})
	}
}

const foreignNFT = `table ip filter {
	chain INPUT {
		type filter hook input priority 0; policy accept;
		ip saddr 198.18.99.1 drop
	}
}
table ip6 ipvskit {
	set keep { type ipv6_addr; elements = { 2001:db8::99 } }
}
table inet other {
	set s { type ipv4_addr; elements = { 198.18.99.2 } }
	chain c {
		ip daddr @s counter accept
	}
}
`

// Foreign tables (including one of our name in the other family) survive
// apply and cleanup; cleanup removes exactly our table.
func TestIntegrationNFTablesOwnership(t *testing.T) {
	ns := testutil.NewNetNS(t)
	ns.Exec(t, "sh", "-c", "printf '%s' \"$0\" | nft -f -", foreignNFT)
	before := ns.Exec(t, "nft", "-s", "list", "ruleset")
	b := newNFT(t, ns, IPv4, 0)
	if err := b.Apply(testCtx(t), sample(IPv4, Options{})); err != nil {
		t.Fatal(err)
	}
	after := ns.Exec(t, "nft", "-s", "list", "ruleset")
	if !strings.Contains(after, before) && !containsAll(after, before) {
		t.Fatalf("foreign tables changed by Apply:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if err := b.Cleanup(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := ns.Exec(t, "nft", "-s", "list", "ruleset"); got != before {
		t.Fatalf("after Cleanup the ruleset is not what it was before Apply (-before +after):\n%s", lineDiff(before, got))
	}
	if err := b.Cleanup(testCtx(t)); err != nil {
		t.Fatalf("a second Cleanup: %v", err)
	}
}

func containsAll(s, sub string) bool {
	for _, l := range strings.Split(sub, "\n") {
		if !strings.Contains(s, l) {
			return false
		}
	}
	return true
}

// A bad ruleset is rejected with a ValidationError and nothing is sent.
func TestIntegrationNFTablesRejectsBadInput(t *testing.T) {
	ns := testutil.NewNetNS(t)
	b := newNFT(t, ns, IPv4, 0)
	good := sample(IPv4, Options{})
	if err := b.Apply(testCtx(t), good); err != nil {
		t.Fatal(err)
	}
	before := listTable(t, ns, IPv4, DefaultTable)
	bad := good.Clone()
	bad.Add(ClusterIPSet, AddrPort(mustAddr("198.18.50.1"), TCP, 81))
	bad.Add(ClusterIPSet, AddrPort(mustAddr("2001:db8::1"), TCP, 80))
	var ve *ValidationError
	if err := b.Apply(testCtx(t), bad); !errors.As(err, &ve) || ve.Value != "2001:db8::1" {
		t.Fatalf("want a ValidationError naming 2001:db8::1, got %v", err)
	}
	if got := listTable(t, ns, IPv4, DefaultTable); got != before {
		t.Fatalf("a rejected ruleset changed the table:\n%s", lineDiff(before, got))
	}
	if err := b.Apply(testCtx(t), sample(IPv6, Options{})); !errors.As(err, &ve) {
		t.Fatalf("an IPv6 ruleset on an IPv4 back end: want a ValidationError, got %v", err)
	}
}

// A batch the kernel refuses half way through a multi-batch sync leaves a
// state that the next Apply repairs.
func TestIntegrationNFTablesFailedApplyIsRepaired(t *testing.T) {
	ns := testutil.NewNetNS(t)
	b := newNFT(t, ns, IPv4, 4)
	r := sample(IPv4, Options{})
	if err := b.Apply(testCtx(t), r); err != nil {
		t.Fatal(err)
	}
	next := r.Clone()
	for i := range 10 {
		next.Add(ClusterIPSet, AddrPort(mustAddr("198.18.60.1"), TCP, uint16(1000+i)))
	}
	next.Clear(LoopBack)
	b.b.beforeFlush = func(c *nftables.Conn, batch int) {
		if batch == 1 {
			c.DelSet(&nftables.Set{Table: b.b.table, Name: "no-such-set"})
		}
	}
	if err := b.Apply(testCtx(t), next); err == nil {
		t.Fatal("the injected failure was not reported")
	}
	b.b.beforeFlush = nil
	half := listTable(t, ns, IPv4, DefaultTable)
	want := scriptListing(t, next)
	if half == want {
		t.Fatal("the injected failure did not leave the table half-applied; the test proves nothing")
	}
	if err := b.Apply(testCtx(t), next); err != nil {
		t.Fatal(err)
	}
	if got := listTable(t, ns, IPv4, DefaultTable); got != want {
		t.Fatalf("the Apply after a failure did not repair the table:\n%s", lineDiff(want, got))
	}
}

// Repair undoes a foreign change to the owned table.
func TestIntegrationNFTablesRepair(t *testing.T) {
	ns := testutil.NewNetNS(t)
	b := newNFT(t, ns, IPv4, 0)
	r := sample(IPv4, Options{})
	if err := b.Apply(testCtx(t), r); err != nil {
		t.Fatal(err)
	}
	want := listTable(t, ns, IPv4, DefaultTable)
	ns.Exec(t, "nft", "flush", "chain", "ip", DefaultTable, "services")
	ns.Exec(t, "nft", "delete", "element", "ip", DefaultTable, "cluster-ip", "{ 198.18.0.1 . tcp . 80 }")
	if err := b.Repair(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := listTable(t, ns, IPv4, DefaultTable); got != want {
		t.Fatalf("Repair did not restore the table:\n%s", lineDiff(want, got))
	}
}
