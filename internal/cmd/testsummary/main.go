// Command testsummary reads `go test -json` on standard input, prints the
// tests' output as it comes, and ends with one line
//
//	LABEL: N passed, N failed, N skipped
//
// followed by the names of the failed and skipped tests. It exits 1 if any
// test or package failed, or, with -no-skips, if any test was skipped; 3 if a
// package failed because the VM rig did (vmexec's "RIG FAILURE").
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type summary struct {
	passed, failed, skipped int
	failedNames, skipNames  []string
	pkgFailed               []string
	rigFailure              bool
	sawPackage              bool
}

func main() {
	label := flag.String("label", "tests", "label of the summary line")
	noSkips := flag.Bool("no-skips", false, "fail when any test was skipped")
	flag.Parse()
	s, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	os.Exit(s.report(os.Stdout, *label, *noSkips))
}

func summarize(r io.Reader, out io.Writer) (*summary, error) {
	s := &summary{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(out, "%s\n", line) // build errors and other plain text
			if strings.Contains(string(line), "RIG FAILURE") {
				s.rigFailure = true
			}
			continue
		}
		name := e.Package
		if e.Test != "" {
			name += "." + e.Test
		}
		switch e.Action {
		case "output":
			io.WriteString(out, e.Output)
			if strings.Contains(e.Output, "RIG FAILURE") {
				s.rigFailure = true
			}
		case "pass":
			if e.Test != "" {
				s.passed++
			} else {
				s.sawPackage = true
			}
		case "fail":
			if e.Test != "" {
				s.failed++
				s.failedNames = append(s.failedNames, name)
			} else {
				s.sawPackage = true
				s.pkgFailed = append(s.pkgFailed, e.Package)
			}
		case "skip":
			if e.Test != "" {
				s.skipped++
				s.skipNames = append(s.skipNames, name)
			} else {
				s.sawPackage = true
			}
		}
	}
	return s, sc.Err()
}

func (s *summary) report(w io.Writer, label string, noSkips bool) int {
	for _, n := range s.failedNames {
		fmt.Fprintf(w, "FAILED  %s\n", n)
	}
	for _, n := range s.skipNames {
		fmt.Fprintf(w, "SKIPPED %s\n", n)
	}
	for _, p := range s.pkgFailed {
		fmt.Fprintf(w, "FAILED PACKAGE %s\n", p)
	}
	if s.rigFailure {
		fmt.Fprintf(w, "%s: RIG FAILURE: the VM rig failed (see above); this says nothing about the tests\n", label)
	}
	fmt.Fprintf(w, "%s: %d passed, %d failed, %d skipped\n", label, s.passed, s.failed, s.skipped)
	switch {
	case s.rigFailure:
		return 3
	case s.failed > 0 || len(s.pkgFailed) > 0 || !s.sawPackage:
		return 1
	case noSkips && s.skipped > 0:
		return 1
	}
	return 0
}
