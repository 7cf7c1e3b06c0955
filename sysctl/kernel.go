package sysctl

import (
	"fmt"
	"strconv"
	"strings"
)

// KernelVersion is the version of a running kernel, as uname(2) reports it.
type KernelVersion struct {
	Major, Minor, Patch int
}

// ParseKernelRelease parses the release string of uname -r ("6.1.0-56-amd64",
// "5.4.0", "4.19.325+debian"). Only the leading numbers count; a missing
// patch level is 0.
func ParseKernelRelease(release string) (KernelVersion, error) {
	var nums [3]int
	rest := release
	n := 0
	for n < 3 {
		end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
		if end == -1 {
			end = len(rest)
		}
		if end == 0 {
			break
		}
		v, err := strconv.Atoi(rest[:end])
		if err != nil {
			return KernelVersion{}, &ValidationError{Field: "kernel release", Value: release, Reason: err.Error()}
		}
		nums[n] = v
		n++
		rest = rest[end:]
		if !strings.HasPrefix(rest, ".") {
			break
		}
		rest = rest[1:]
	}
	if n < 2 {
		return KernelVersion{}, &ValidationError{Field: "kernel release", Value: release, Reason: "does not start with MAJOR.MINOR"}
	}
	return KernelVersion{nums[0], nums[1], nums[2]}, nil
}

// Less reports whether v is older than w.
func (v KernelVersion) Less(w KernelVersion) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	return v.Patch < w.Patch
}

func (v KernelVersion) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }
