package iptables

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/internal/testutil"
)

// probeModules returns the modules the errors joined in err name, failing t
// for an error that is not a missing feature.
func probeModules(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Probe returned %T, want errors joined: %v", err, err)
	}
	var out []string
	for _, e := range j.Unwrap() {
		var u *inet.UnsupportedFeatureError
		if !errors.As(e, &u) || !errors.Is(e, ErrNotSupported) {
			t.Errorf("not a missing feature: %v", e)
			continue
		}
		out = append(out, u.Module)
	}
	return out
}

// The nftables probes find every feature of a kernel that has them, and
// leave the namespace as they found it: another program's tables, one of
// them with the probes' name prefix, included.
func TestIntegrationNFTablesProbeChangesNothing(t *testing.T) {
	ns := testutil.NewNetNS(t)
	testutil.RequireTool(t, "nft")
	ns.Exec(t, "nft", "add table ip ipvskit; add chain ip ipvskit c; add table ip6 ipvskit-probe-000000000000; add set ip6 ipvskit-probe-000000000000 s { type ipv6_addr; }")
	before := ns.Exec(t, "nft", "list", "ruleset")
	for _, f := range []Family{IPv4, IPv6} {
		b := newNFT(t, ns, f, 0)
		if err := b.Probe(testCtx(t)); err != nil {
			t.Errorf("%v: %v", f, err)
		}
	}
	if after := ns.Exec(t, "nft", "list", "ruleset"); after != before {
		t.Errorf("the probes changed the ruleset:\n--- before\n%s--- after\n%s", before, after)
	}
}

// The iptables probes, in each flavor, name exactly what the kernel lacks:
// nothing, or xt_ipvs where the kernel has no IPVS (the build machine's),
// as iptables-restore itself finds; and they change no rule and no ipset.
func TestIntegrationIPTablesProbeNamesWhatIsMissing(t *testing.T) {
	for _, fl := range []Flavor{FlavorLegacy, FlavorNFT} {
		for _, f := range []Family{IPv4, IPv6} {
			t.Run(fl.String()+"/"+f.String(), func(t *testing.T) {
				ns := testutil.NewNetNS(t)
				b := newIPT(t, ns, f, fl)
				ns.Exec(t, "ipset", "create", "IPVSKIT-CLUSTER-IP", "hash:ip,port")
				ipt := strings.TrimSuffix(fl.binary(f, "x"), "-x") // iptables-nft, ip6tables-legacy, ...
				ns.Exec(t, ipt, "-t", "nat", "-N", "IPVSKIT-SERVICES")
				save := func() string {
					return ns.Exec(t, ipt, "-t", "nat", "-S") + ns.Exec(t, ipt, "-t", "filter", "-S") + ns.Exec(t, "ipset", "list")
				}
				before := save()
				var want []string
				if hasXTIPVS(t, f, fl) != nil {
					want = []string{"xt_ipvs"}
				}
				got := probeModules(t, b.Probe(testCtx(t)))
				t.Logf("modules named: %q", got)
				if !slices.Equal(got, want) {
					t.Errorf("Probe named %q, want %q", got, want)
				}
				if after := save(); after != before {
					t.Errorf("the probes changed the namespace:\n--- before\n%s--- after\n%s", before, after)
				}
			})
		}
	}
}
