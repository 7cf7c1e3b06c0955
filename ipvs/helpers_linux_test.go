package ipvs

import (
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// newTestClient opens a Client in a fresh namespace that has IPVS.
func newTestClient(t *testing.T) (*Client, *testutil.NetNS) {
	t.Helper()
	ns := testutil.NewNetNS(t)
	testutil.RequireIPVS(t, ns)
	c, err := New(&Config{NetNS: ns.Handle()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ns
}

// saved returns ipvsadm -Sn's lines, sorted.
func saved(t *testing.T, ns *testutil.NetNS) []string {
	t.Helper()
	out := strings.TrimSpace(ns.Exec(t, "ipvsadm", "-Sn"))
	if out == "" {
		return nil
	}
	lines := strings.Split(out, "\n")
	slices.Sort(lines)
	return lines
}

// ipvsadmRestore feeds lines to ipvsadm -R inside ns.
func ipvsadmRestore(t *testing.T, ns *testutil.NetNS, lines ...string) {
	t.Helper()
	if _, err := ns.TryExec(t, []byte(strings.Join(lines, "\n")+"\n"), "ipvsadm", "-R"); err != nil {
		t.Fatalf("ipvsadm -R: %v\ninput:\n%s", err, strings.Join(lines, "\n"))
	}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func diffLines(t *testing.T, what string, want, got []string) {
	t.Helper()
	want, got = sortedCopy(want), sortedCopy(got)
	if !slices.Equal(want, got) {
		t.Fatalf("%s differ\nwant:\n  %s\ngot:\n  %s", what, strings.Join(want, "\n  "), strings.Join(got, "\n  "))
	}
}
