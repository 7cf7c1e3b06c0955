//go:build !linux

package testutil

import "testing"

// NetNS is a network namespace; they exist only on Linux.
type NetNS struct{}

// NewNetNS skips tb: network namespaces exist only on Linux.
func NewNetNS(tb testing.TB) *NetNS {
	tb.Helper()
	Missing(tb, "Linux network namespaces", "not on Linux")
	return nil
}

// Do is never reached on other systems.
func (ns *NetNS) Do(tb testing.TB, f func()) { tb.Helper(); tb.FailNow() }

// Exec is never reached on other systems.
func (ns *NetNS) Exec(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	tb.FailNow()
	return ""
}
