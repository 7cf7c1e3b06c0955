package ipvstest

import (
	"context"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/ipvs/internal/contract"
)

// The fake meets the same expectations as ipvs.Client against a kernel
// (ipvs/contract_linux_test.go); its Dump is the oracle.
func TestFakeMeetsTheContract(t *testing.T) {
	contract.Run(t, func(t *testing.T) contract.World {
		f := New()
		return contract.World{
			IPVS: f,
			Restore: func(t *testing.T, lines ...string) {
				if err := f.Restore(context.Background(), []byte(strings.Join(lines, "\n")+"\n")); err != nil {
					t.Fatal(err)
				}
			},
			Oracle: func(*testing.T) string { return f.Dump() },
			// The fake takes any interface name.
			SyncInterface: func(*testing.T) string { return "vs0" },
			Daemons: func(t *testing.T) string {
				ds, err := f.Daemons(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				return contract.DaemonLines(ds)
			},
		}
	})
}
