package conntracktest

import (
	"testing"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/conntrack/internal/contract"
)

// The fake meets the same expectations as conntrack.Client against a
// kernel's table (conntrack/contract_linux_test.go).
func TestFakeMeetsTheContract(t *testing.T) {
	contract.Run(t, func(t *testing.T) contract.World {
		f := New()
		return contract.World{
			Deleter: f,
			Insert: func(t *testing.T, flows ...conntrack.Flow) {
				if err := f.Add(flows...); err != nil {
					t.Fatal(err)
				}
			},
			Oracle: func(*testing.T) []conntrack.Flow { return f.Flows() },
		}
	})
}
