package testutil

import (
	"strings"
	"testing"
)

// IPVSAdmSave returns `ipvsadm -Sn` in ns. ipvsadm's service dump has a
// kernel race: the kernel resumes it by position in one table that every
// namespace shares, so a service another namespace (another test) adds
// meanwhile can make it list one of ns's services twice, a state no
// namespace can hold. Such a listing is read again, a few times at most.
func IPVSAdmSave(tb testing.TB, ns *NetNS) string {
	tb.Helper()
	for i := 0; ; i++ {
		out := ns.Exec(tb, "/usr/sbin/ipvsadm", "-Sn")
		if !repeatsAService(out) || i == 4 {
			return out
		}
		tb.Logf("ipvsadm -Sn listed a service twice (its dump raced another namespace's change); reading again:\n%s", out)
	}
}

// repeatsAService reports whether an ipvsadm -Sn listing has one service
// line twice.
func repeatsAService(save string) bool {
	seen := map[string]bool{}
	for _, l := range strings.Split(save, "\n") {
		if !strings.HasPrefix(l, "-A ") {
			continue
		}
		if seen[l] {
			return true
		}
		seen[l] = true
	}
	return false
}
