package conntrack_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/internal/nsfd/nsfdtest"
	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/vishvananda/netns"
)

// TestIntegrationNetNSRule checks the documented values of Config.NetNS.
// The same flows are in both namespaces; a flow of another VIP (not ours to
// delete) stays in both.
func TestIntegrationNetNSRule(t *testing.T) {
	here, there := testutil.NewNetNS(t), testutil.NewNetNS(t)
	newClient(t, here) // skips without ctnetlink
	for _, ns := range []*testutil.NetNS{here, there} {
		insert(t, ns, 0, udpA, udpOther)
	}
	both := list(t, here)
	nsfdtest.Rule(t, here, there,
		func(ns netns.NsHandle) (*conntrack.Client, error) { return conntrack.New(&conntrack.Config{NetNS: ns}) },
		func(t *testing.T, c *conntrack.Client, in, notIn *testutil.NetNS) {
			n, err := c.Delete(t.Context(), conntrack.Filter{Protocol: conntrack.UDP, Addr: addr("198.18.100.1"), Port: 53})
			if err != nil || n != 1 {
				t.Fatalf("Delete = %d, %v; want the one flow to 198.18.100.1:53", n, err)
			}
			if got := list(t, in); !slices.Equal(got, []conntrack.Flow{udpOther}) {
				t.Errorf("flows where the client works: %v, want only %v", got, udpOther)
			}
			if got := list(t, notIn); !slices.Equal(got, both) {
				t.Errorf("flows of the other namespace: %v, want %v", got, both)
			}
			insert(t, in, 0, udpA) // back as it was, for the next case
		},
		func(err error) bool {
			var ve *conntrack.ValidationError
			return errors.As(err, &ve) && ve.Field == "Config.NetNS"
		})
	for _, ns := range []*testutil.NetNS{here, there} {
		if got := list(t, ns); !slices.Equal(got, both) {
			t.Errorf("flows at the end: %v, want %v", got, both)
		}
	}
}
