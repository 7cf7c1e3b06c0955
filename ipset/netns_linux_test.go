package ipset

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/nsfd/nsfdtest"
	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/vishvananda/netns"
)

// setNames lists the sets of ns with Debian's ipset, sorted.
func setNames(t *testing.T, ns *testutil.NetNS) []string {
	t.Helper()
	names := strings.Fields(ns.Exec(t, "ipset", "list", "-n"))
	slices.Sort(names)
	return names
}

// TestIntegrationNetNSRule checks the documented values of Config.NetNS.
// Another program's set, named like ours would be in the other namespace,
// is left alone in both.
func TestIntegrationNetNSRule(t *testing.T) {
	here, there := testutil.NewNetNS(t), testutil.NewNetNS(t)
	newTestClient(t) // skips without ipset
	for _, ns := range []*testutil.NetNS{here, there} {
		ns.Exec(t, "ipset", "create", "other-prog", "hash:ip")
		ns.Exec(t, "ipset", "add", "other-prog", "198.18.7.7")
	}
	nsfdtest.Rule(t, here, there,
		func(ns netns.NsHandle) (*Client, error) { return New(&Config{NetNS: ns}) },
		func(t *testing.T, c *Client, in, notIn *testutil.NetNS) {
			ctx := t.Context()
			if err := c.Create(ctx, Set{Name: "ours", Type: HashIP}); err != nil {
				t.Fatal(err)
			}
			if got := setNames(t, in); !slices.Equal(got, []string{"other-prog", "ours"}) {
				t.Errorf("sets where the client works: %v, want other-prog and ours", got)
			}
			if got := setNames(t, notIn); !slices.Equal(got, []string{"other-prog"}) {
				t.Errorf("sets of the other namespace: %v, want other-prog only", got)
			}
			if err := c.Destroy(ctx, "ours"); err != nil {
				t.Fatal(err)
			}
		},
		func(err error) bool {
			var ve *ValidationError
			return errors.As(err, &ve) && ve.Field == "Config.NetNS"
		})
	for _, ns := range []*testutil.NetNS{here, there} {
		if out := ns.Exec(t, "ipset", "save", "other-prog"); !strings.Contains(out, "add other-prog 198.18.7.7") {
			t.Errorf("the foreign set changed:\n%s", out)
		}
	}
}
