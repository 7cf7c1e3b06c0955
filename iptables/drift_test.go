package iptables

import (
	"fmt"
	"strings"
	"testing"
)

// wantDrift is an ObjectDrift a test expects: its object, a part of its problem,
// and its counts.
type wantDrift struct {
	object, problem string
	missing, extra  int
}

func (w wantDrift) match(d ObjectDrift) bool {
	return d.Object == w.object && strings.Contains(d.Problem, w.problem) && d.Missing == w.missing && d.Extra == w.extra
}

// checkDrifts fails t unless got matches want one to one, in order.
func checkDrifts(t *testing.T, got []ObjectDrift, want ...wantDrift) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = want[i].match(got[i])
	}
	if !ok {
		t.Fatalf("drift:\n%s\nwant:\n%v", driftLines(got), want)
	}
}

func driftLines(ds []ObjectDrift) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "\t%s (missing %d, extra %d)\n", d, d.Missing, d.Extra)
	}
	return b.String()
}
