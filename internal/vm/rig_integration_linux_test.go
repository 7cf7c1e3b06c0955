package vm

import (
	"os"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// TestIntegrationRigHasIPVSAndDummy proves the rig: in a fresh namespace it
// makes a dummy link and an IPVS service with Debian's own tools and reads the
// service back from the kernel's /proc/net/ip_vs. Outside the rig it skips on
// a kernel without IPVS or dummy links; inside, that would be a failure.
func TestIntegrationRigHasIPVSAndDummy(t *testing.T) {
	ns := testutil.NewNetNS(t)
	testutil.RequireDummy(t, ns)
	testutil.RequireIPVS(t, ns)

	ns.Exec(t, "ip", "link", "add", "ipvskit0", "type", "dummy")
	ns.Exec(t, "ip", "addr", "add", "198.18.0.1/32", "dev", "ipvskit0")
	if got := ns.Exec(t, "ip", "-o", "addr", "show", "dev", "ipvskit0"); !strings.Contains(got, "198.18.0.1/32") {
		t.Fatalf("dummy link lacks its address: %s", got)
	}
	ns.Exec(t, "ipvsadm", "-A", "-t", "198.18.0.1:80", "-s", "wrr")
	ns.Exec(t, "ipvsadm", "-a", "-t", "198.18.0.1:80", "-r", "198.18.1.2:8080", "-m", "-w", "3")

	var table string
	ns.Do(t, func() {
		b, err := os.ReadFile("/proc/thread-self/net/ip_vs")
		if err != nil {
			t.Error(err)
		}
		table = string(b)
	})
	// /proc/net/ip_vs prints addresses and ports in hex:
	// 198.18.0.1:80 is C6120001:0050, 198.18.1.2:8080 is C6120102:1F90.
	for _, want := range []string{"TCP  C6120001:0050 wrr", "-> C6120102:1F90      Masq    3"} {
		if !strings.Contains(table, want) {
			t.Errorf("/proc/net/ip_vs lacks %q:\n%s", want, table)
		}
	}

	// The test's own namespace did not get the service.
	if own, err := os.ReadFile("/proc/thread-self/net/ip_vs"); err == nil && strings.Contains(string(own), "C6120001") {
		t.Errorf("the service leaked into the test's own namespace:\n%s", own)
	}
}
