package vm

import (
	"bytes"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// TestInitramfsUnpacksWithCpio checks the archive with an independent reader,
// the cpio program, when it is installed.
func TestInitramfsUnpacksWithCpio(t *testing.T) {
	cpio := testutil.RequireTool(t, "cpio")
	dir := t.TempDir()
	mods := filepath.Join(dir, "mods")
	if err := os.MkdirAll(filepath.Join(mods, "kernel/net"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(mods, "kernel/net/a.ko"), []byte("module a"), 0o644)
	os.WriteFile(filepath.Join(mods, "kernel/net/bb.ko"), []byte("module bb!"), 0o644)
	bb := filepath.Join(dir, "busybox")
	os.WriteFile(bb, []byte("#!/bin/sh\n"), 0o755)

	var buf bytes.Buffer
	if err := writeInitramfs(&buf, bb, mods, []string{"kernel/net/bb.ko", "kernel/net/a.ko"}); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	cmd := exec.Command(cpio, "-id", "--quiet")
	cmd.Dir, cmd.Stdin = out, zr
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cpio: %v: %s", err, msg)
	}
	check := func(name, want string, mode os.FileMode) {
		t.Helper()
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || string(got) != want {
			t.Fatalf("%s = %q, %v; want %q", name, got, err, want)
		}
		if st, _ := os.Stat(filepath.Join(out, name)); st.Mode().Perm() != mode {
			t.Fatalf("%s mode %v, want %v", name, st.Mode().Perm(), mode)
		}
	}
	check("lib/modules/000-bb.ko", "module bb!", 0o644)
	check("lib/modules/001-a.ko", "module a", 0o644)
	check("modules", "000-bb.ko\n001-a.ko\n", 0o644)
	check("bin/busybox", "#!/bin/sh\n", 0o755)
	init, _ := os.ReadFile(filepath.Join(out, "init"))
	if !strings.HasPrefix(string(init), "#!/bin/busybox sh\n") || !strings.Contains(string(init), `chroot /host "$agent" guest`) {
		t.Fatalf("init script:\n%s", init)
	}
}
