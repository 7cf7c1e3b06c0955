package proxier

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/internal/vm"
	"github.com/vishvananda/netns"
)

// TestIntegrationPreflightNamesExactlyTheMissingModules runs Preflight, for
// a Config that uses every probe (both back ends, both families, strict ARP,
// schedulers rr, sh and mh, conntrack), in a namespace where another
// program already has objects of our kinds and names. In the VM rig every
// module is there and Preflight must return nil; scripts/test runs it once
// more in a guest booted without some modules (vmtest -without, chosen so
// that each probe family misses one), where the modules its errors name
// must be exactly those the guest's command line says were left out. Either
// way, nothing in the namespace may change.
func TestIntegrationPreflightNamesExactlyTheMissingModules(t *testing.T) {
	ns := testutil.NewNetNS(t)
	leftOut, err := vm.LeftOut()
	if err != nil {
		t.Fatal(err)
	}
	testutil.RequireIPVS(t, ns) // the probes need it to read the neighbour's services
	if !slices.Contains(leftOut, "dummy") {
		testutil.RequireDummy(t, ns)
	}
	for _, tool := range []string{"ipvsadm", "nft", "ipset", "iptables-nft", "ip6tables-nft", "iptables-legacy"} {
		testutil.RequireTool(t, tool)
	}

	// Another program's objects, with our names where that is the risk:
	// links ipvskit0 and ipvskit-p000000 (a veth pair: dummy may be left
	// out), virtual servers
	// (an IPv6 fwmark one, the kind the scheduler probe asks for), nft
	// tables ipvskit and ipvskit-probe-*, an ipset and a chain of the
	// iptables back end's names.
	ns.Exec(t, "ip", "link", "add", "ipvskit0", "type", "veth", "peer", "name", "ipvskit-p000000")
	ns.Exec(t, "ip", "addr", "add", "198.18.0.1/32", "dev", "ipvskit0")
	ns.Exec(t, "ipvsadm", "-A", "-t", "198.18.0.1:80", "-s", "rr")
	ns.Exec(t, "ipvsadm", "-a", "-t", "198.18.0.1:80", "-r", "198.18.1.1:8080", "-m")
	ns.Exec(t, "ipvsadm", "-A", "-f", "1", "-6", "-s", "rr")
	ns.Exec(t, "nft", "add table ip ipvskit; add chain ip ipvskit c; add table ip6 ipvskit-probe-000000000000")
	ns.Exec(t, "ipset", "create", "IPVSKIT-CLUSTER-IP", "hash:ip,port")
	ns.Exec(t, "ipset", "add", "IPVSKIT-CLUSTER-IP", "198.18.0.1,tcp:80")
	ns.Exec(t, "iptables-nft", "-t", "nat", "-N", "IPVSKIT-SERVICES")
	ns.Exec(t, "iptables-nft", "-t", "nat", "-A", "IPVSKIT-SERVICES", "-d", "198.18.0.1/32", "-j", "RETURN")
	before := neighbourState(t, ns)

	fd := int(ns.Handle())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := &PreflightOptions{Schedulers: []string{"rr", "sh", "mh"}}
	named := map[string]bool{}
	for _, backend := range []Backend{NFTables, IPTables} {
		cfg := &Config{Backend: backend, Families: []Family{IPv4, IPv6}, StrictARP: true}
		err := Preflight(ctx, cfg, netns.NsHandle(fd), opts)
		for _, m := range modulesNamed(t, backend, err) {
			named[m] = true
		}
	}
	var got []string
	for m := range named {
		got = append(got, m)
	}
	sort.Strings(got)
	want := slices.Clone(leftOut)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("Preflight named modules %q; the guest left out %q", got, want)
	}

	if after := neighbourState(t, ns); after != before {
		t.Errorf("Preflight changed the namespace:\n--- before\n%s\n--- after\n%s", before, after)
	}
}

// modulesNamed returns the module of each error joined in err, failing t
// for any that is not an *UnsupportedFeatureError.
func modulesNamed(t *testing.T, b Backend, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("%v: Preflight returned %T, want errors joined: %v", b, err, err)
	}
	var out []string
	for _, e := range j.Unwrap() {
		var u *UnsupportedFeatureError
		if !errors.As(e, &u) || !errors.Is(e, ErrNotSupported) {
			t.Errorf("%v: not an unsupported feature: %v", b, e)
			continue
		}
		if slices.Contains(out, u.Module) {
			t.Errorf("%v: module %s named twice", b, u.Module)
		}
		t.Logf("%v: %v", b, e)
		out = append(out, u.Module)
	}
	return out
}

// neighbourState is everything of the namespace Preflight could change,
// as the reference tools print it, and the sysctls of the profile.
func neighbourState(t *testing.T, ns *testutil.NetNS) string {
	t.Helper()
	var b strings.Builder
	for _, cmd := range [][]string{
		{"ip", "-d", "link", "show"}, {"ip", "addr", "show"},
		{"ipvsadm", "-Sn"}, {"nft", "list", "ruleset"}, {"ipset", "list"},
		{"iptables-nft", "-t", "nat", "-S"}, {"iptables-nft", "-S"}, {"ip6tables-nft", "-t", "nat", "-S"},
		{"iptables-legacy", "-t", "nat", "-S"}, {"iptables-legacy", "-S"},
	} {
		b.WriteString("# " + strings.Join(cmd, " ") + "\n")
		b.WriteString(ns.Exec(t, cmd[0], cmd[1:]...))
	}
	ns.Do(t, func() {
		keys, _ := filepath.Glob("/proc/sys/net/ipv4/vs/*")
		keys = append(keys, "/proc/sys/net/bridge/bridge-nf-call-iptables", "/proc/sys/net/ipv4/ip_forward",
			"/proc/sys/net/ipv4/conf/all/arp_ignore", "/proc/sys/net/ipv4/conf/all/arp_announce")
		for _, k := range keys {
			v, err := os.ReadFile(k)
			if err != nil {
				v = []byte(err.Error() + "\n")
			}
			b.WriteString(k + " = " + string(v))
		}
	})
	return b.String()
}
