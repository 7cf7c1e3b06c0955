package vm

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The runner's own tests replace QEMU with this test binary: with
// fakeQEMUEnv set it plays the guest. In "agent" mode it connects to the
// chardev socket named in its arguments and serves jobs on the host, as the
// real agent does in the guest; in "hang" mode it prints a console line and
// never says it is ready; in "die" mode it prints and exits at once.
const fakeQEMUEnv = "IPVSKIT_FAKE_QEMU"

func TestMain(m *testing.M) {
	switch os.Getenv(fakeQEMUEnv) {
	case "":
		os.Exit(m.Run())
	case "agent":
		os.Stdout.WriteString("fake console: booting\n")
		c, err := net.Dial("unix", chardevPath(os.Args[1:]))
		if err != nil {
			os.Stdout.WriteString("fake console: " + err.Error() + "\n")
			os.Exit(1)
		}
		serveJobs(c)
		os.Exit(0)
	case "hang":
		// Print, then connect but never announce the agent: a boot stuck
		// before init. The connection comes after the print, so once Boot
		// has seen it the console line is in the pipe it drains.
		os.Stdout.WriteString("fake console: stuck after the BIOS\n")
		if _, err := net.Dial("unix", chardevPath(os.Args[1:])); err != nil {
			os.Exit(1)
		}
		select {} // Boot must kill it
	case "die":
		os.Stdout.WriteString("fake console: Kernel panic - not syncing\n")
		os.Exit(1)
	}
}

func chardevPath(args []string) string {
	for i, a := range args {
		if a == "-chardev" && i+1 < len(args) {
			for _, kv := range strings.Split(args[i+1], ",") {
				if p, ok := strings.CutPrefix(kv, "path="); ok {
					return p
				}
			}
		}
	}
	return ""
}

func fakeConfig(t *testing.T, mode string, timeout time.Duration) *Config {
	t.Helper()
	t.Setenv(fakeQEMUEnv, mode)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &Config{QEMU: self, AgentPath: "/unused", BootTimeout: timeout}
}

func bootFake(t *testing.T) *Session {
	t.Helper()
	s, err := Boot(context.Background(), fakeConfig(t, "agent", time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRunPassesArgsDirEnvAndExitCode(t *testing.T) {
	s := bootFake(t)
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code, err := s.Run(context.Background(), Job{
		Argv: []string{"/bin/sh", "-c", `printf '%s|' "$@"; pwd; echo "marker=$IPVSKIT_IN_VM tmp=$TMPDIR keep=$KEEP"; echo oops >&2; exit 42`,
			"sh", "a b", "", "-test.v=true"},
		Dir: dir,
		Env: []string{"KEEP=yes", "TMPDIR=/host/tmp", "PATH=/usr/bin:/bin"},
	}, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	if code != 42 {
		t.Errorf("exit code %d, want 42", code)
	}
	want := "a b||-test.v=true|" + dir + "\nmarker=1 tmp=" + guestTmp + " keep=yes\n"
	if out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	if errOut.String() != "oops\n" {
		t.Errorf("stderr %q, want %q", errOut.String(), "oops\n")
	}
}

func TestRunReportsAProgramThatCannotStart(t *testing.T) {
	s := bootFake(t)
	code, err := s.Run(context.Background(), Job{Argv: []string{"/nonexistent/prog"}}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || code != -1 || !strings.Contains(err.Error(), "/nonexistent/prog") {
		t.Fatalf("code %d, err %v; want -1 and an error naming the program", code, err)
	}
}

func TestRunKillsTheJobWhenTheContextEnds(t *testing.T) {
	s := bootFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	w := writerFunc(func(p []byte) { // cancel once the job has shown it runs
		select {
		case <-started:
		default:
			close(started)
			cancel()
		}
	})
	_, err := s.Run(ctx, Job{Argv: []string{"/bin/sh", "-c", "echo up; exec sleep 600"}}, w, &bytes.Buffer{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	// The session still works after a kill.
	code, err := s.Run(context.Background(), Job{Argv: []string{"/bin/true"}}, &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil || code != 0 {
		t.Fatalf("after kill: code %d, err %v", code, err)
	}
}

func TestConcurrentJobsShareOneBootThroughTheSessionSocket(t *testing.T) {
	s := bootFake(t)
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go Serve(ln, s)

	const n = 8
	type res struct {
		code int
		out  string
		err  error
	}
	results := make(chan res, n)
	for i := range n {
		go func() {
			var out bytes.Buffer
			code, err := RunRemote(context.Background(), sock, Job{
				Argv: []string{"/bin/sh", "-c", "echo job $0; exit $0", string(rune('0' + i))},
			}, &out, &bytes.Buffer{})
			results <- res{code, out.String(), err}
		}()
	}
	seen := map[int]bool{}
	for range n {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.out != "job "+string(rune('0'+r.code))+"\n" {
			t.Errorf("exit %d came with output %q", r.code, r.out)
		}
		seen[r.code] = true
	}
	if len(seen) != n {
		t.Fatalf("saw exit codes %v, want %d distinct", seen, n)
	}
}

func TestBootHangIsKilledRetriedAndReportedAsRigFailure(t *testing.T) {
	start := time.Now()
	// The bound must cover starting the fake (slow under emulation and
	// -race); the fake then hangs for good, so the bound is what ends it.
	_, err := Boot(context.Background(), fakeConfig(t, "hang", 5*time.Second))
	var re *RigError
	if !errors.As(err, &re) {
		t.Fatalf("err %v, want a *RigError", err)
	}
	if re.Attempts != 2 || strings.Count(re.Reason, "hear from the agent") != 2 || strings.Count(re.Reason, "within 5s") != 2 {
		t.Errorf("want two timed-out attempts, got %d: %s", re.Attempts, re.Reason)
	}
	if !strings.Contains(re.ConsoleTail, "stuck after the BIOS") || !strings.Contains(err.Error(), "console tail") {
		t.Errorf("error lacks the console tail: %v", err)
	}
	if time.Since(start) > time.Minute {
		t.Errorf("the hung boots were not killed at their bound")
	}
}

func TestBootOfAGuestThatDiesIsARigFailure(t *testing.T) {
	_, err := Boot(context.Background(), fakeConfig(t, "die", time.Minute))
	var re *RigError
	if !errors.As(err, &re) || !strings.Contains(re.Reason, "QEMU exited") || !strings.Contains(re.ConsoleTail, "Kernel panic") {
		t.Fatalf("err %v, want a RigError saying QEMU exited, with the panic in the tail", err)
	}
}

type writerFunc func(p []byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }
