package iptables

import (
	"errors"
	"testing"

	"github.com/google/nftables"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// A back end asks the kernel about each feature once: Probe and the
// diagnosis of a failed sync share the answers, a present feature and a
// missing one alike.
func TestIntegrationNFTablesProbesOncePerFeature(t *testing.T) {
	ns := testutil.NewNetNS(t)
	b := newNFT(t, ns, IPv4, 0)
	asked := map[string]int{}
	counting := func(kind string, add func(c *nftables.Conn, t *nftables.Table, f Family)) nftProbe {
		return nftProbe{kind, func(c *nftables.Conn, t *nftables.Table, f Family) {
			asked[kind]++
			add(c, t, f)
		}}
	}
	b.b.probes = []nftProbe{
		counting("present feature", func(*nftables.Conn, *nftables.Table, Family) {}),
		counting("test feature", func(c *nftables.Conn, t *nftables.Table, f Family) {
			c.AddChain(&nftables.Chain{Name: "c", Table: t})
			nosuch(c, t, "c")
		}),
	}
	for range 3 {
		if err := b.Probe(testCtx(t)); !errors.Is(err, ErrNotSupported) {
			t.Fatalf("Probe = %v, want the test feature missing", err)
		}
	}
	if asked["present feature"] != 1 || asked["test feature"] != 1 {
		t.Errorf("the kernel was asked %v, want once per feature", asked)
	}
}
