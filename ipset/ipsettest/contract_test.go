package ipsettest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/ipset"
	"github.com/ipvskit/ipvskit/ipset/internal/contract"
	"github.com/ipvskit/ipvskit/ipset/ipsettest"
)

// The fake meets the same expectations as ipset.Client against a kernel
// (ipset/contract_linux_test.go); its Dump, parsed, is the oracle.
func TestFakeMeetsTheContract(t *testing.T) {
	contract.Run(t, func(t *testing.T) contract.World {
		f := ipsettest.New()
		return contract.World{
			Sets: f,
			Foreign: func(t *testing.T, s ipset.Set, entries ...ipset.Entry) {
				if err := f.Replace(context.Background(), s, entries); err != nil {
					t.Fatal(err)
				}
			},
			Reference: func(t *testing.T, name string) func(t *testing.T) {
				if err := f.Reference(name); err != nil {
					t.Fatal(err)
				}
				return func(t *testing.T) {
					if err := f.Unreference(name); err != nil {
						t.Fatal(err)
					}
				}
			},
			Oracle: func(t *testing.T) []ipset.SetInfo {
				sets, err := ipset.ParseText(strings.NewReader(f.Dump()))
				if err != nil {
					t.Fatalf("parsing the Fake's Dump: %v\n%s", err, f.Dump())
				}
				return sets
			},
		}
	})
}
