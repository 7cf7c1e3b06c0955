package testutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// NetNS is a fresh network namespace owned by one test. It has lo up and is
// closed by the test's cleanup; nothing else refers to it, so the kernel frees
// it and everything in it once the last thread leaves.
type NetNS struct {
	h netns.NsHandle
}

// NewNetNS makes a fresh network namespace with lo up. It skips tb (fails it in
// the rig) when not root.
func NewNetNS(tb testing.TB) *NetNS {
	tb.Helper()
	RequireRoot(tb)
	var (
		h   netns.NsHandle
		err error
	)
	onNewThread(func() {
		// netns.New unshares the calling thread, which onNewThread throws
		// away afterwards, so the test's own namespace is never changed.
		h, err = netns.New()
		if err != nil {
			return
		}
		err = setLoUp()
	})
	if err != nil {
		if h.IsOpen() {
			h.Close()
		}
		Missing(tb, "a new network namespace with lo up", err)
	}
	ns := &NetNS{h: h}
	tb.Cleanup(func() { ns.h.Close() })
	return ns
}

// Handle returns the namespace's handle, for a client's Config.NetNS. It stays
// valid until the test ends.
func (ns *NetNS) Handle() netns.NsHandle { return ns.h }

// Path returns a path that names the namespace while the test runs
// (for nsenter-style tools or Config fields that take a path).
func (ns *NetNS) Path() string { return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), int(ns.h)) }

// Do runs f on a fresh OS thread that has entered ns. The thread is discarded
// afterwards, so no other goroutine ever runs in ns by accident. A failure to
// enter ns fails tb. f may call tb.Fatal: its goroutine is the one Do starts,
// so Do reports it with tb.FailNow on the test's goroutine.
func (ns *NetNS) Do(tb testing.TB, f func()) {
	tb.Helper()
	var (
		err      error
		finished bool
	)
	onNewThread(func() {
		if err = netns.Set(ns.h); err != nil {
			return
		}
		f()
		finished = true
	})
	if err != nil {
		tb.Fatalf("entering test netns: %v", err)
	}
	if !finished {
		// f called runtime.Goexit (t.Fatal, t.Skip) on Do's goroutine:
		// end the test on its own goroutine the same way.
		if tb.Skipped() && !tb.Failed() {
			tb.SkipNow()
		}
		tb.FailNow()
	}
}

// Exec runs a program inside ns and returns its standard output. A non-zero
// exit fails tb with the program's standard error.
func (ns *NetNS) Exec(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	out, err := ns.TryExec(tb, nil, name, args...)
	if err != nil {
		tb.Fatalf("%s %q: %v", name, args, err)
	}
	return out
}

// TryExec runs a program inside ns with stdin (may be nil) and returns its
// standard output, and an error that carries its standard error if it failed.
func (ns *NetNS) TryExec(tb testing.TB, stdin []byte, name string, args ...string) (string, error) {
	tb.Helper()
	RequireTool(tb, name)
	var (
		stdout, stderr bytes.Buffer
		err            error
	)
	ns.Do(tb, func() {
		// Go forks from the calling thread, which is locked and inside ns,
		// so the child starts inside ns.
		cmd := exec.Command(name, args...)
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
	})
	if err != nil {
		return stdout.String(), fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.String(), nil
}

// Start starts cmd inside ns (it forks from a thread that has entered ns)
// and kills it, if it is still running, when tb ends. The caller waits for
// it as usual.
func (ns *NetNS) Start(tb testing.TB, cmd *exec.Cmd) {
	tb.Helper()
	RequireTool(tb, cmd.Path)
	var err error
	ns.Do(tb, func() { err = cmd.Start() })
	if err != nil {
		tb.Fatalf("starting %s in the test netns: %v", cmd.Path, err)
	}
	tb.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
}

// onNewThread runs f on a goroutine locked to a fresh OS thread and waits for
// it. The goroutine exits still locked, so the runtime terminates the thread
// instead of reusing it with whatever namespace f left it in.
func onNewThread(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		f()
	}()
	<-done
}

func setLoUp() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("finding lo: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("setting lo up: %w", err)
	}
	return nil
}
