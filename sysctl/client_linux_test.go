//go:build linux

package sysctl_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/sysctl"
	"github.com/ipvskit/ipvskit/sysctl/internal/contract"
)

func newClient(t *testing.T, ns *testutil.NetNS) *sysctl.Client {
	t.Helper()
	c, err := sysctl.New(&sysctl.Config{NetNS: ns.Handle()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// oracle reads a key inside ns with sysctl(8).
func oracle(t *testing.T, ns *testutil.NetNS, key string) string {
	t.Helper()
	return strings.TrimSpace(ns.Exec(t, "sysctl", "-n", strings.NewReplacer(".", "/", "/", ".").Replace(key)))
}

// hostValues reads keys in the namespace the test runs in (the machine's
// own), or "" for a key that is not there.
func hostValues(t *testing.T, keys []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, k := range keys {
		b, err := os.ReadFile("/proc/sys/" + k)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		m[k] = strings.TrimSpace(string(b))
	}
	return m
}

// The Client in a fresh namespace meets the expectations the fake meets.
func TestIntegrationContract(t *testing.T) {
	contract.Run(t, func(t *testing.T) contract.World {
		ns := testutil.NewNetNS(t)
		return contract.World{
			S:      newClient(t, ns),
			Oracle: func(t *testing.T, key string) string { return oracle(t, ns, key) },
		}
	})
}

// Setting every key of the profile that exists here in a fresh namespace to
// a value the machine's own namespace does not have leaves the machine's own
// values as they were; the fresh namespace does see the new ones.
func TestIntegrationHostNamespaceUnchanged(t *testing.T) {
	ns := testutil.NewNetNS(t)
	c := newClient(t, ns)
	ctx := context.Background()
	keys := []string{
		"net/ipv4/ip_forward", "net/ipv4/conf/all/route_localnet",
		"net/ipv4/conf/all/arp_ignore", "net/ipv4/conf/all/arp_announce",
		"net/ipv4/conf/lo/arp_ignore", "net/bridge/bridge-nf-call-iptables",
		"net/ipv4/vs/conntrack", "net/ipv4/vs/expire_nodest_conn",
		"net/ipv4/vs/expire_quiescent_template", "net/ipv4/vs/conn_reuse_mode",
	}
	before := hostValues(t, keys)
	var p sysctl.Profile
	for _, k := range keys {
		cur, err := c.Get(ctx, k)
		if errors.Is(err, os.ErrNotExist) {
			continue // not on this kernel; the VM run covers it
		}
		if err != nil {
			t.Fatal(err)
		}
		// A value different from both the namespace's and the host's.
		v := "1"
		if cur == "1" || before[k] == "1" {
			v = "0"
			if cur == "0" || before[k] == "0" {
				v = "2"
			}
		}
		p = append(p, sysctl.Setting{Key: k, Value: v})
	}
	if len(p) < 5 {
		t.Fatalf("only %d of the keys exist in a fresh namespace: %v", len(p), p)
	}
	changes, err := c.Apply(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != len(p) {
		t.Fatalf("Apply changed %d keys; want all %d: %v", len(changes), len(p), changes)
	}
	for _, s := range p {
		if got := oracle(t, ns, s.Key); got != s.Value {
			t.Errorf("in the namespace, %s reads %q; want %q", s.Key, got, s.Value)
		}
	}
	after := hostValues(t, keys)
	for _, k := range keys {
		if before[k] != after[k] {
			t.Errorf("the machine's own %s changed from %q to %q", k, before[k], after[k])
		}
	}
}

// The IPVS profile on the running kernel (the VM's 6.1): every IPVS key is
// set, conn_reuse_mode is left at the kernel's default from 5.9 on, and a
// second Apply and a Check find nothing to do. Without IPVS (the build
// machine), the error names the key and the module.
func TestIntegrationIPVSProfile(t *testing.T) {
	ns := testutil.NewNetNS(t)
	c := newClient(t, ns)
	ctx := context.Background()
	_, err := c.Get(ctx, "net/ipv4/vs/conntrack")
	var ne *sysctl.NotExistError
	if errors.As(err, &ne) {
		if ne.Module != "ip_vs" || !errors.Is(err, sysctl.ErrNotSupported) || !strings.Contains(err.Error(), "ip_vs") {
			t.Errorf("missing IPVS key: %v; want a *NotExistError naming ip_vs, matching ErrNotSupported", err)
		}
		p, err := c.IPVSProfile(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Apply(ctx, p); !errors.As(err, &ne) || ne.Module != "ip_vs" {
			t.Errorf("Apply of the IPVS profile without IPVS: %v; want a *NotExistError naming ip_vs", err)
		}
		if got := oracle(t, ns, "net/ipv4/ip_forward"); got != "0" {
			t.Errorf("a refused Apply wrote ip_forward=%s", got)
		}
	}
	testutil.RequireSysctl(t, ns, "net/ipv4/vs/conntrack", "ip_vs")
	testutil.RequireSysctl(t, ns, "net/bridge/bridge-nf-call-iptables", "br_netfilter")

	v, err := c.KernelVersion()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.IPVSProfile(&sysctl.IPVSOptions{StrictARP: true})
	if err != nil {
		t.Fatal(err)
	}
	hasReuse := slices.ContainsFunc(p, func(s sysctl.Setting) bool { return s.Key == "net/ipv4/vs/conn_reuse_mode" })
	if old := v.Less(sysctl.KernelVersion{Major: 5, Minor: 9}); hasReuse != old {
		t.Fatalf("kernel %v: profile sets conn_reuse_mode = %v; want %v", v, hasReuse, old)
	}
	reuseBefore := oracle(t, ns, "net/ipv4/vs/conn_reuse_mode")
	hostKeys := []string{"net/ipv4/vs/conntrack", "net/ipv4/vs/expire_nodest_conn", "net/ipv4/ip_forward", "net/ipv4/conf/all/arp_ignore"}
	hostBefore := hostValues(t, hostKeys)

	changes, err := c.Apply(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	changed := map[string]sysctl.Change{}
	for _, ch := range changes {
		changed[ch.Key] = ch
	}
	for _, k := range []string{"net/ipv4/vs/conntrack", "net/ipv4/vs/expire_nodest_conn",
		"net/ipv4/vs/expire_quiescent_template", "net/ipv4/ip_forward",
		"net/ipv4/conf/all/route_localnet", "net/ipv4/conf/all/arp_ignore"} {
		if ch, ok := changed[k]; !ok || ch.Old != "0" || ch.New != "1" {
			t.Errorf("change of %s = %+v; want 0 -> 1", k, ch)
		}
	}
	if ch := changed["net/ipv4/conf/all/arp_announce"]; ch.Old != "0" || ch.New != "2" {
		t.Errorf("change of arp_announce = %+v; want 0 -> 2", ch)
	}
	for _, s := range p {
		if got := oracle(t, ns, s.Key); got != s.Value {
			t.Errorf("sysctl -n %s = %q; want %q", s.Key, got, s.Value)
		}
	}
	if !hasReuse {
		if got := oracle(t, ns, "net/ipv4/vs/conn_reuse_mode"); got != reuseBefore {
			t.Errorf("conn_reuse_mode changed from %s to %s although the profile leaves it", reuseBefore, got)
		}
	}
	if again, err := c.Apply(ctx, p); err != nil || len(again) != 0 {
		t.Errorf("second Apply = %v, %v; want nothing", again, err)
	}
	if drift, err := c.Check(ctx, p); err != nil || len(drift) != 0 {
		t.Errorf("Check = %v, %v; want no drift", drift, err)
	}
	if after := hostValues(t, hostKeys); !mapsEqual(hostBefore, after) {
		t.Errorf("the machine's own values changed: %v -> %v", hostBefore, after)
	}
}

// Scoped strict ARP sets the interface's keys and leaves "all" alone.
func TestIntegrationScopedARP(t *testing.T) {
	ns := testutil.NewNetNS(t)
	c := newClient(t, ns)
	ns.Exec(t, "ip", "link", "add", "br-lan", "type", "bridge")
	p, err := sysctl.IPVSProfile(sysctl.KernelVersion{Major: 6, Minor: 1}, &sysctl.IPVSOptions{
		StrictARP: true, ARPInterfaces: []string{"br-lan"}, NoBridgeNetfilter: true})
	if err != nil {
		t.Fatal(err)
	}
	// Only the ARP part: the IPVS keys need IPVS (covered in the VM).
	p = slices.DeleteFunc(p, func(s sysctl.Setting) bool { return !strings.Contains(s.Key, "/arp_") })
	changes, err := c.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 2 || changes[0].Key != "net/ipv4/conf/br-lan/arp_ignore" || changes[1].Key != "net/ipv4/conf/br-lan/arp_announce" {
		t.Fatalf("changes = %v; want br-lan's arp_ignore and arp_announce", changes)
	}
	if got := oracle(t, ns, "net/ipv4/conf/br-lan/arp_ignore") + oracle(t, ns, "net/ipv4/conf/br-lan/arp_announce"); got != "12" {
		t.Errorf("br-lan arp_ignore, arp_announce = %s; want 1, 2", got)
	}
	if got := oracle(t, ns, "net/ipv4/conf/all/arp_ignore") + oracle(t, ns, "net/ipv4/conf/all/arp_announce"); got != "00" {
		t.Errorf("all arp_ignore, arp_announce = %s; want untouched 0, 0", got)
	}
}

// A bridge-netfilter key, when br_netfilter is loaded (it is on the build
// machine and in the VM), is per namespace too.
func TestIntegrationBridgeNetfilterKey(t *testing.T) {
	ns := testutil.NewNetNS(t)
	testutil.RequireSysctl(t, ns, "net/bridge/bridge-nf-call-iptables", "br_netfilter")
	c := newClient(t, ns)
	const k = "net/bridge/bridge-nf-call-iptables"
	before := hostValues(t, []string{k})
	cur, err := c.Get(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	flip := map[string]string{"0": "1", "1": "0"}[cur]
	if err := c.Set(context.Background(), k, flip); err != nil {
		t.Fatal(err)
	}
	if got := oracle(t, ns, k); got != flip {
		t.Fatalf("%s = %s after Set %s", k, got, flip)
	}
	if after := hostValues(t, []string{k}); after[k] != before[k] {
		t.Fatalf("the machine's own %s changed from %s to %s", k, before[k], after[k])
	}
}

// Close releases the namespace; later calls fail with fs.ErrClosed.
func TestIntegrationClose(t *testing.T) {
	ns := testutil.NewNetNS(t)
	c := newClient(t, ns)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(context.Background(), "net/ipv4/ip_forward"); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Get after Close: %v; want fs.ErrClosed", err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Clients of two namespaces used at once from many goroutines never see or
// change each other's values: every file is opened on a thread inside the
// right namespace.
func TestIntegrationConcurrentNamespaces(t *testing.T) {
	a, b := testutil.NewNetNS(t), testutil.NewNetNS(t)
	ca, cb := newClient(t, a), newClient(t, b)
	ctx := context.Background()
	if err := ca.Set(ctx, "net/ipv4/ip_forward", "1"); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 200)
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			c, want := ca, "1"
			if i%2 == 1 {
				c, want = cb, "0"
			}
			v, err := c.Get(ctx, "net/ipv4/ip_forward")
			if err == nil && v != want {
				err = fmt.Errorf("read %s; want %s", v, want)
			}
			if err == nil {
				err = c.Set(ctx, "net/ipv4/ip_forward", want)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := oracle(t, b, "net/ipv4/ip_forward"); got != "0" {
		t.Fatalf("namespace b has ip_forward=%s", got)
	}
}

// A nil Config means the namespace New was called in: here, the machine's
// own. Only read, never written.
func TestIntegrationNilConfigReadsTheCurrentNamespace(t *testing.T) {
	c, err := sysctl.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := hostValues(t, []string{"net/ipv4/ip_forward"})["net/ipv4/ip_forward"]
	if got, err := c.Get(context.Background(), "net.ipv4.ip_forward"); err != nil || got != want {
		t.Fatalf("Get = %q, %v; want the current namespace's %q", got, err, want)
	}
}
