package netnstest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// NS is a throwaway network namespace of one test. It is closed when the
// test ends; the kernel frees it, and all in it, once nothing uses it.
type NS struct {
	h netns.NsHandle
}

// New makes a fresh network namespace with lo up, closed by tb's cleanup.
// It skips tb unless it runs as root.
func New(tb testing.TB) *NS {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skipf("netnstest: a network namespace needs root (running as uid %d)", os.Geteuid())
	}
	var h netns.NsHandle
	err := onNewThread(func() error {
		// netns.New unshares this thread, which is thrown away after.
		var err error
		if h, err = netns.New(); err != nil {
			return err
		}
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		return netlink.LinkSetUp(lo)
	})
	if err != nil {
		if h.IsOpen() {
			h.Close()
		}
		tb.Fatalf("netnstest: a new network namespace with lo up: %v", err)
	}
	ns := &NS{h: h}
	tb.Cleanup(func() { ns.h.Close() })
	return ns
}

// Handle returns the namespace's handle, for an ipvskit client's
// Config.NetNS or proxier.Open. It is valid until the test ends.
func (ns *NS) Handle() netns.NsHandle { return ns.h }

// Do runs f inside ns, on an OS thread of its own that is thrown away
// afterwards, so nothing else ever runs in ns by accident. Sockets that f
// opens stay in ns, wherever they are used later. f may call tb.Fatal.
func (ns *NS) Do(tb testing.TB, f func()) {
	tb.Helper()
	entered, finished := false, false
	err := onNewThread(func() error {
		if err := netns.Set(ns.h); err != nil {
			return err
		}
		entered = true
		f()
		finished = true
		return nil
	})
	if !entered {
		tb.Fatalf("netnstest: entering the namespace: %v", err)
	}
	if !finished { // f ended its goroutine (tb.Fatal, tb.Skip): end the test's too
		if tb.Skipped() && !tb.Failed() {
			tb.SkipNow()
		}
		tb.FailNow()
	}
}

// Run runs a program inside ns (ip, ipvsadm, nft, ...) and returns its
// standard output; a failure fails tb with its standard error.
func (ns *NS) Run(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	var stdout, stderr bytes.Buffer
	var err error
	ns.Do(tb, func() {
		// Go forks from this thread, which is inside ns.
		cmd := exec.Command(name, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
	})
	if err != nil {
		tb.Fatalf("netnstest: %s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.String()
}

// Sysctl sets key (as under /proc/sys: "net/ipv4/ip_forward") to value
// inside ns.
func (ns *NS) Sysctl(tb testing.TB, key, value string) {
	tb.Helper()
	var err error
	ns.Do(tb, func() { err = writeSysctl(key, value) })
	if err != nil {
		tb.Fatalf("netnstest: sysctl %s=%s: %v", key, value, err)
	}
}

func writeSysctl(key, value string) error {
	return os.WriteFile("/proc/sys/"+strings.TrimPrefix(key, "/"), []byte(value), 0)
}

// onNewThread runs f on a goroutine locked to a fresh OS thread and waits
// for it. The goroutine ends still locked, so the runtime ends the thread
// rather than reuse it in whatever namespace f left it.
func onNewThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := fmt.Errorf("netnstest: the function ended its goroutine")
		defer func() { errc <- err }()
		err = f()
	}()
	return <-errc
}
