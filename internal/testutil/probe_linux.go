package testutil

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/vishvananda/netlink"
)

// RequireIPVS skips tb (fails it in the rig) unless the kernel has IPVS loaded.
// IPVS makes /proc/net/ip_vs in every namespace; thread-self because /proc/self
// shows the main thread's namespace, not ns.
func RequireIPVS(tb testing.TB, ns *NetNS) {
	tb.Helper()
	var err error
	ns.Do(tb, func() { _, err = os.Stat("/proc/thread-self/net/ip_vs") })
	if err != nil {
		Missing(tb, "IPVS (module ip_vs)", err)
	}
}

// RequireDummy skips tb (fails it in the rig) unless a dummy link can be made
// in ns. The probe link is deleted again.
func RequireDummy(tb testing.TB, ns *NetNS) {
	tb.Helper()
	var err error
	ns.Do(tb, func() {
		l := &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: "ipvskit-probe"}}
		if err = netlink.LinkAdd(l); err != nil {
			return
		}
		err = netlink.LinkDel(l)
	})
	if err != nil {
		Missing(tb, "dummy links (module dummy)", err)
	}
}

// RequireSysctl skips tb (fails it in the rig) unless the sysctl key, as a path
// below /proc/sys (e.g. "net/ipv4/vs/conntrack"), exists in ns. module names
// what provides it, for the message.
func RequireSysctl(tb testing.TB, ns *NetNS, key, module string) {
	tb.Helper()
	var err error
	ns.Do(tb, func() { _, err = os.Stat("/proc/sys/" + key) })
	if errors.Is(err, os.ErrNotExist) {
		Missing(tb, fmt.Sprintf("sysctl %s (module %s)", key, module), err)
	} else if err != nil {
		tb.Fatalf("stat sysctl %s: %v", key, err)
	}
}
