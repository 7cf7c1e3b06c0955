package dummy_test

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/internal/nsfd/nsfdtest"
	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/vishvananda/netns"
)

// TestIntegrationNetNSRule checks the documented values of Config.NetNS,
// through both of the Client's sockets (Ensure on one, the batched Update
// on the other). Another program's dummy link, in both namespaces, keeps
// its address.
func TestIntegrationNetNSRule(t *testing.T) {
	here, there := testutil.NewNetNS(t), testutil.NewNetNS(t)
	testutil.RequireDummy(t, here)
	theirs := []netip.Prefix{netip.MustParsePrefix("198.18.9.1/24")}
	for _, ns := range []*testutil.NetNS{here, there} {
		ns.Exec(t, "ip", "link", "add", "other0", "type", "dummy")
		ns.Exec(t, "ip", "addr", "add", "198.18.9.1/24", "dev", "other0")
	}
	vip := netip.MustParseAddr("198.18.0.1")
	nsfdtest.Rule(t, here, there,
		func(ns netns.NsHandle) (*dummy.Client, error) { return dummy.New(&dummy.Config{NetNS: ns}) },
		func(t *testing.T, c *dummy.Client, in, notIn *testutil.NetNS) {
			ctx := t.Context()
			if _, err := c.Ensure(ctx, "vips0"); err != nil {
				t.Fatal(err)
			}
			if err := c.Update(ctx, "vips0", []netip.Addr{vip}, nil); err != nil {
				t.Fatal(err)
			}
			if got, _ := ipAddrs(t, in, "vips0"); !slices.Equal(got, []netip.Prefix{netip.PrefixFrom(vip, 32)}) {
				t.Errorf("vips0 where the client works has %v, want %v/32", got, vip)
			}
			if _, ok := ipAddrs(t, notIn, "vips0"); ok {
				t.Errorf("vips0 exists in the other namespace")
			}
			if err := c.Delete(ctx, "vips0"); err != nil {
				t.Fatal(err)
			}
		},
		func(err error) bool {
			var ve *dummy.ValidationError
			return errors.As(err, &ve) && ve.Field == "Config.NetNS"
		})
	for _, ns := range []*testutil.NetNS{here, there} {
		if got, ok := ipAddrs(t, ns, "other0"); !ok || !slices.Equal(got, theirs) {
			t.Errorf("the foreign link other0 now has %v (exists: %v), want %v", got, ok, theirs)
		}
	}
}

// A negative NetNS is refused before any socket: this holds on any kernel.
func TestNewRefusesNegativeNetNS(t *testing.T) {
	_, err := dummy.New(&dummy.Config{NetNS: netns.None()})
	var ve *dummy.ValidationError
	if !errors.As(err, &ve) || ve.Field != "Config.NetNS" || ve.Value != "-1" {
		t.Fatalf("New(NetNS -1) = %v, want a *ValidationError on Config.NetNS, value -1", err)
	}
}
