package main

import (
	"bytes"
	"context"
	"log/slog"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// --version prints one line naming the program, its version and the Go
// that built it, and opens nothing (no config, no kernel, no API server).
func TestVersionFlag(t *testing.T) {
	var out, logs bytes.Buffer
	f := flags{version: true, config: "/nonexistent/config.conf"}
	if err := run(context.Background(), f, slog.New(slog.NewTextHandler(&logs, nil)), &out); err != nil {
		t.Fatalf("run --version: %v", err)
	}
	line := out.String()
	if !strings.HasPrefix(line, "ipvskit-proxy ") || !strings.HasSuffix(line, " "+runtime.Version()+"\n") || strings.Count(line, "\n") != 1 {
		t.Errorf("--version printed %q, want one line \"ipvskit-proxy VERSION ... %s\"", line, runtime.Version())
	}
	if logs.Len() != 0 {
		t.Errorf("--version logged %q", logs.String())
	}
}

// Any other run logs the version first, as structured fields, through the
// logger the agent gets.
func TestStartLogsVersion(t *testing.T) {
	var logs bytes.Buffer
	f := flags{config: "/nonexistent/config.conf"}
	if err := run(context.Background(), f, slog.New(slog.NewTextHandler(&logs, nil)), &bytes.Buffer{}); err == nil {
		t.Fatal("run with a missing config file: no error")
	}
	first, _, _ := strings.Cut(logs.String(), "\n")
	if !strings.Contains(first, `msg="ipvskit-proxy starting" version=`) || !strings.Contains(first, " go="+runtime.Version()) {
		t.Errorf("first log line %q, want the start-up line with version and go", first)
	}
}

// The release build's -X main.version and -X main.revision (make release,
// make image) reach --version. It builds the binary, so it needs the go
// command and a writable build cache.
func TestVersionFromLdflags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildWith(t, "-X main.version=v9.8.7-test -X main.revision=0123abcd")
	if out := versionOf(t, bin); !strings.HasPrefix(out, "ipvskit-proxy v9.8.7-test (revision 0123abcd") {
		t.Errorf("--version printed %q, want it to start with \"ipvskit-proxy v9.8.7-test (revision 0123abcd\"", out)
	}
}

// Without ldflags, --version prints the commit the go command stamped, if
// it stamped one (go version -m is the oracle).
func TestVersionFromBuildInfo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildWith(t, "")
	info, err := exec.Command(goCommand(t), "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	out := versionOf(t, bin)
	_, rev, stamped := strings.Cut(string(info), "vcs.revision=")
	if !stamped {
		t.Logf("no VCS information stamped (-buildvcs=false, or a git worktree): %q", out)
		if strings.Contains(out, "(revision") {
			t.Errorf("--version printed %q, with a revision nobody stamped", out)
		}
		return
	}
	rev, _, _ = strings.Cut(rev, "\n")
	if !strings.Contains(out, "(revision "+strings.TrimSpace(rev)) {
		t.Errorf("--version printed %q, want revision %s", out, rev)
	}
}

func goCommand(t *testing.T) string {
	t.Helper()
	g, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	return g
}

// buildWith builds the command with ldflags (and -buildvcs=auto, over a
// GOFLAGS that turns it off) and returns the binary's path. Same cgo
// setting as the test's own build, so the packages come from the cache.
func buildWith(t *testing.T, ldflags string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ipvskit-proxy")
	out, err := exec.Command(goCommand(t), "build", "-buildvcs=auto", "-ldflags="+ldflags, "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func versionOf(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("ipvskit-proxy --version: %v\n%s", err, out)
	}
	return string(out)
}

// --metrics-bind-address overrides metricsBindAddress (the take-over
// manifest needs it: kubeadm's file keeps metrics on loopback); a value
// that is not host:port is refused.
func TestMetricsBindAddressFlag(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	cfg, err := loadConfig(flags{metricsBind: "0.0.0.0:10249"}, log)
	if err != nil || cfg.MetricsBindAddress != "0.0.0.0:10249" {
		t.Errorf("loadConfig: %v, %v; want metrics on 0.0.0.0:10249", cfg, err)
	}
	if _, err := loadConfig(flags{metricsBind: "0.0.0.0"}, log); err == nil || !strings.Contains(err.Error(), "--metrics-bind-address") {
		t.Errorf("loadConfig with 0.0.0.0: %v, want an error naming --metrics-bind-address", err)
	}
}
