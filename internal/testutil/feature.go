package testutil

import (
	"os"
	"testing"
)

// EnvInVM is set to "1" by the VM rig's guest agent for every command it runs.
// Inside the rig every kernel feature the project uses must be present, so a
// skip for a missing feature becomes a failure.
const EnvInVM = "IPVSKIT_IN_VM"

// InVM reports whether the test runs inside the VM rig.
func InVM() bool { return os.Getenv(EnvInVM) == "1" }

// Missing skips tb because the running kernel or machine lacks feature (why
// says how that was found out). Inside the VM rig it fails tb instead.
func Missing(tb testing.TB, feature string, why any) {
	tb.Helper()
	if InVM() {
		tb.Fatalf("missing inside the VM rig, where it must exist: %s: %v", feature, why)
	}
	tb.Skipf("skipped: needs %s: %v", feature, why)
}

// Require runs probe and calls Missing with feature if it fails.
func Require(tb testing.TB, feature string, probe func() error) {
	tb.Helper()
	if err := probe(); err != nil {
		Missing(tb, feature, err)
	}
}

// RequireRoot skips tb (fails it in the rig) unless it runs as root.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		Missing(tb, "root", "running as uid "+itoa(os.Geteuid()))
	}
}

// RequireTool skips tb (fails it in the rig) unless the named program is on PATH.
func RequireTool(tb testing.TB, name string) string {
	tb.Helper()
	p, err := lookPath(name)
	if err != nil {
		Missing(tb, "the "+name+" program", err)
	}
	return p
}
