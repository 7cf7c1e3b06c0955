package sysctltest

import (
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/sysctl/internal/contract"
)

// The fake meets the same expectations as sysctl.Client in a namespace.
func TestFakeMeetsTheContract(t *testing.T) {
	contract.Run(t, func(t *testing.T) contract.World {
		f := New("")
		return contract.World{S: f, Oracle: func(t *testing.T, key string) string {
			for _, line := range strings.Split(f.Dump(), "\n") {
				dotted := strings.ReplaceAll(key, "/", ".")
				if v, ok := strings.CutPrefix(line, dotted+" = "); ok {
					return v
				}
			}
			t.Fatalf("no %s in the fake", key)
			return ""
		}}
	})
}
