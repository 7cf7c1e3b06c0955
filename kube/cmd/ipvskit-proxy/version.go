package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version and revision are the release's version and commit, set by the
// release build (make release, make image):
//
//	go build -ldflags "-X main.version=v0.3.0 -X main.revision=$(git rev-parse HEAD)" ./cmd/ipvskit-proxy
//
// Empty, the build information stands in: the module's version (a
// VCS-derived pseudo-version when built from a tagged clone) or "unknown",
// and vcs.revision, which the go command stamps only when it sees the
// repository (not with -buildvcs=false, not in a git worktree, not in a
// container build without .git: hence the variable).
var version, revision string

// build is what --version prints and the start-up line logs.
type build struct {
	Version  string // the release's, or the module's
	Revision string // vcs.revision: the commit built; empty without VCS information
	Time     string // vcs.time: the commit's time
	Modified bool   // vcs.modified: the work tree had uncommitted changes
	Go       string // the toolchain that built it
}

// readBuild combines the ldflags version with the binary's build
// information.
func readBuild() build {
	b := build{Version: version, Revision: revision, Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if b.Revision == "" {
					b.Revision = s.Value
				}
			case "vcs.time":
				b.Time = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Version == "" {
		b.Version = "unknown"
	}
	return b
}

// String is the --version line: "ipvskit-proxy v0.3.0 (revision 1a2b...,
// modified, 2026-11-27T21:00:00Z) go1.26.8".
func (b build) String() string {
	s := "ipvskit-proxy " + b.Version
	if b.Revision != "" {
		s += " (revision " + b.Revision
		if b.Modified {
			s += ", modified"
		}
		if b.Time != "" {
			s += ", " + b.Time
		}
		s += ")"
	}
	return fmt.Sprintf("%s %s", s, b.Go)
}

// attrs are the start-up line's fields.
func (b build) attrs() []any {
	return []any{"version", b.Version, "revision", b.Revision, "modified", b.Modified, "go", b.Go}
}
