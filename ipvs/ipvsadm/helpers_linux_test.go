package ipvsadm

import (
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// ipvsadmRestore feeds lines to ipvsadm -R inside ns.
func ipvsadmRestore(t *testing.T, ns *testutil.NetNS, lines ...string) {
	t.Helper()
	if _, err := ns.TryExec(t, []byte(strings.Join(lines, "\n")+"\n"), "ipvsadm", "-R"); err != nil {
		t.Fatalf("ipvsadm -R: %v\ninput:\n%s", err, strings.Join(lines, "\n"))
	}
}
