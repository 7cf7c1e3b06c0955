package nlconn

import (
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/nsfd"
	"github.com/ipvskit/ipvskit/internal/nsfd/nsfdtest"
	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Config.NetNS follows the rule of package nsfd; an address another program
// put on lo, in both namespaces, stays.
func TestIntegrationNetNSRule(t *testing.T) {
	here, there := testutil.NewNetNS(t), testutil.NewNetNS(t)
	for _, ns := range []*testutil.NetNS{here, there} {
		ns.Exec(t, "ip", "addr", "add", "198.18.7.7/32", "dev", "lo")
	}
	n := 0
	nsfdtest.Rule(t, here, there,
		func(ns netns.NsHandle) (*Conn, error) { return Dial(unix.NETLINK_ROUTE, &Config{NetNS: int(ns)}) },
		func(t *testing.T, c *Conn, in, notIn *testutil.NetNS) {
			n++
			a := testAddr(n)
			if _, err := c.Execute(t.Context(), addrMsg(a, 32)); err != nil {
				t.Fatal(err)
			}
			if !loAddrs(t, in)[a.String()] || loAddrs(t, notIn)[a.String()] {
				t.Errorf("%v on lo where the connection works: %v, in the other namespace: %v; want only the first",
					a, loAddrs(t, in)[a.String()], loAddrs(t, notIn)[a.String()])
			}
		},
		func(err error) bool { return err != nil && strings.Contains(err.Error(), nsfd.Rule) })
	for _, ns := range []*testutil.NetNS{here, there} {
		if !loAddrs(t, ns)["198.18.7.7"] {
			t.Errorf("another program's address 198.18.7.7 is gone from lo")
		}
	}
}
