package main

import (
	"bytes"
	"strings"
	"testing"
)

const stream = `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN TestA\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA/sub"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"fail","Package":"q","Test":"TestC"}
{"Action":"fail","Package":"q"}
{"Action":"pass","Package":"p"}
# r
r/x.go:3: undefined: y
`

func TestSummaryCountsAndExitCodes(t *testing.T) {
	var out bytes.Buffer
	s, err := summarize(strings.NewReader(stream), &out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "=== RUN TestA\n") || !strings.Contains(out.String(), "undefined: y") {
		t.Errorf("output not passed through:\n%s", out.String())
	}
	var rep bytes.Buffer
	if code := s.report(&rep, "vm", true); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.HasSuffix(rep.String(), "vm: 2 passed, 1 failed, 1 skipped\n") ||
		!strings.Contains(rep.String(), "SKIPPED p.TestB") || !strings.Contains(rep.String(), "FAILED  q.TestC") {
		t.Errorf("report:\n%s", rep.String())
	}
}

func TestSkipsFailOnlyWhenAskedAndRigFailuresStandApart(t *testing.T) {
	s, _ := summarize(strings.NewReader(`{"Action":"skip","Package":"p","Test":"T"}
{"Action":"pass","Package":"p"}
`), &bytes.Buffer{})
	if code := s.report(&bytes.Buffer{}, "unit", false); code != 0 {
		t.Errorf("skip without -no-skips: exit %d, want 0", code)
	}
	if code := s.report(&bytes.Buffer{}, "vm", true); code != 1 {
		t.Errorf("skip with -no-skips: exit %d, want 1", code)
	}
	r, _ := summarize(strings.NewReader(`{"Action":"output","Package":"p","Output":"vmexec: RIG FAILURE (not a test failure): boom\n"}
{"Action":"fail","Package":"p"}
`), &bytes.Buffer{})
	var rep bytes.Buffer
	if code := r.report(&rep, "vm", true); code != 3 || !strings.Contains(rep.String(), "vm: RIG FAILURE") {
		t.Errorf("rig failure: exit %d, report %s", code, rep.String())
	}
	empty, _ := summarize(strings.NewReader(""), &bytes.Buffer{})
	if code := empty.report(&bytes.Buffer{}, "vm", true); code != 1 {
		t.Errorf("no packages ran: exit %d, want 1", code)
	}
}
