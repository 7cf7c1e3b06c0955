package conntrack_test

import (
	"testing"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/conntrack/internal/contract"
	"github.com/ipvskit/ipvskit/internal/testutil"
)

// The Client meets the contract that conntracktest.Fake is held to, on a
// fresh namespace's table; conntrack(8) inserts the flows and lists them.
func TestIntegrationContract(t *testing.T) {
	contract.Run(t, func(t *testing.T) contract.World {
		ns := testutil.NewNetNS(t)
		return contract.World{
			Deleter: newClient(t, ns),
			Insert:  func(t *testing.T, flows ...conntrack.Flow) { insert(t, ns, 0, flows...) },
			Oracle:  func(t *testing.T) []conntrack.Flow { return list(t, ns) },
		}
	})
}
