package ipvs_test

import (
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/internal/contract"
)

// The Client meets the contract that ipvstest.Fake is held to, in a fresh
// namespace per expectation; ipvsadm makes another program's services and
// is the oracle. It needs IPVS: it runs in the VM rig.
func TestIntegrationContract(t *testing.T) {
	contract.Run(t, func(t *testing.T) contract.World {
		ns := testutil.NewNetNS(t)
		testutil.RequireIPVS(t, ns)
		c, err := ipvs.New(&ipvs.Config{NetNS: ns.Handle()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return contract.World{
			IPVS: c,
			Restore: func(t *testing.T, lines ...string) {
				if _, err := ns.TryExec(t, []byte(strings.Join(lines, "\n")+"\n"), "ipvsadm", "-R"); err != nil {
					t.Fatalf("ipvsadm -R: %v", err)
				}
			},
			Oracle: func(t *testing.T) string { return ns.Exec(t, "ipvsadm", "-Sn") },
			SyncInterface: func(t *testing.T) string {
				ns.Exec(t, "sh", "-c", "ip link add vs0 type veth peer name vs1 && ip link set vs0 up && ip link set vs1 up")
				return "vs0"
			},
			Daemons: func(t *testing.T) string { return ns.Exec(t, "ipvsadm", "-Ln", "--daemon") },
		}
	})
}
