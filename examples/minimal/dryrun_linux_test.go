package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// nobody is the unprivileged user the dry run runs as.
const nobody = 65534

// The program's own -dry-run path, run as an unprivileged user with no
// capability (nobody, when the test runs as root), prints the plan of
// every example State: no root and no IPVS (this machine's kernel may
// have none) are needed. The binary and the files are copied where nobody
// can read them.
func TestDryRunAsUnprivilegedUser(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // the test's temporary directories, 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "minimal")
	copyFile(t, self, bin, 0o755)
	for _, file := range stateFiles(t) {
		state := filepath.Join(dir, filepath.Base(file))
		copyFile(t, file, state, 0o644)
		args := []string{"-dry-run", state}
		if dualStack(file) {
			args = append([]string{"-dual-stack"}, args...)
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{asMainEnv + "=1", "PATH=/usr/bin:/bin"}
		cmd.Dir = dir
		if os.Geteuid() == 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("%s as uid %d: %v\n%s", file, nobody, err, stderr.String())
			continue
		}
		checkPlan(t, file, out)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
