package sysctl_test

import (
	"errors"
	"testing"

	"github.com/ipvskit/ipvskit/internal/nsfd/nsfdtest"
	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/sysctl"
	"github.com/vishvananda/netns"
)

// TestIntegrationNetNSRule checks the documented values of Config.NetNS. A
// key another program set, in both namespaces, keeps its value.
func TestIntegrationNetNSRule(t *testing.T) {
	here, there := testutil.NewNetNS(t), testutil.NewNetNS(t)
	const foreign, ours = "net.ipv4.conf.all.arp_announce", "net/ipv4/conf/all/arp_ignore"
	for _, ns := range []*testutil.NetNS{here, there} {
		ns.Exec(t, "sysctl", "-qw", foreign+"=2")
		if got := oracle(t, ns, ours); got != "0" {
			t.Fatalf("%s in a fresh namespace is %s, want 0", ours, got)
		}
	}
	nsfdtest.Rule(t, here, there,
		func(ns netns.NsHandle) (*sysctl.Client, error) { return sysctl.New(&sysctl.Config{NetNS: ns}) },
		func(t *testing.T, c *sysctl.Client, in, notIn *testutil.NetNS) {
			if err := c.Set(t.Context(), ours, "1"); err != nil {
				t.Fatal(err)
			}
			if got := oracle(t, in, ours); got != "1" {
				t.Errorf("%s where the client works: %s, want 1", ours, got)
			}
			if got := oracle(t, notIn, ours); got != "0" {
				t.Errorf("%s in the other namespace: %s, want 0", ours, got)
			}
			if err := c.Set(t.Context(), ours, "0"); err != nil {
				t.Fatal(err)
			}
		},
		func(err error) bool {
			var ve *sysctl.ValidationError
			return errors.As(err, &ve) && ve.Field == "Config.NetNS"
		})
	for _, ns := range []*testutil.NetNS{here, there} {
		if got := oracle(t, ns, foreign); got != "2" {
			t.Errorf("%s, set by another program, is now %s", foreign, got)
		}
	}
}
