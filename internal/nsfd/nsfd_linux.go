package nsfd

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Open returns a close-on-exec descriptor of the namespace fd names, which
// the caller owns and closes: a duplicate of fd, or, for 0, a descriptor of
// the calling thread's namespace. A negative fd is an error (callers Check
// first, to name their field).
func Open(fd int) (int, error) {
	if _, reason, ok := Check(fd); !ok {
		return -1, fmt.Errorf("network namespace descriptor %d: %s", fd, reason)
	}
	if fd > 0 {
		if reason, ok := IsNet(fd); !ok {
			return -1, fmt.Errorf("network namespace descriptor %d: %s", fd, reason)
		}
		d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return -1, fmt.Errorf("duplicating network namespace descriptor %d: %w", fd, err)
		}
		return d, nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening the calling thread's network namespace: %w", err)
	}
	return d, nil
}

// IsNet reports whether fd, a positive descriptor, is open on a network
// namespace; if not, reason says what it is instead.
func IsNet(fd int) (reason string, ok bool) {
	typ, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE)
	if err != nil {
		return fmt.Sprintf("is not a namespace file descriptor (%v)", err), false
	}
	if typ != unix.CLONE_NEWNET {
		return "is a namespace, but not a network namespace", false
	}
	return "", true
}

// Do runs f on a fresh OS thread inside the namespace of the descriptor fd
// (from Open) and returns f's error. The thread is locked and never
// unlocked, so the runtime ends it afterwards instead of reusing a thread in
// another namespace; no other goroutine ever runs there. A thread that is
// already in that namespace is not moved, which needs no privilege.
// Programs that f starts with os/exec start inside the namespace.
func Do(fd int, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: see above.
		same, err := sameAsThread(fd)
		if err != nil {
			errc <- err
			return
		}
		if !same {
			if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
				errc <- fmt.Errorf("entering the network namespace: %w", err)
				return
			}
		}
		errc <- f()
	}()
	return <-errc
}

// sameAsThread reports whether fd is the calling thread's namespace.
func sameAsThread(fd int) (bool, error) {
	var here, there unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &here); err != nil {
		return false, fmt.Errorf("reading the thread's network namespace: %w", err)
	}
	if err := unix.Fstat(fd, &there); err != nil {
		return false, fmt.Errorf("reading network namespace descriptor %d: %w", fd, err)
	}
	return here.Dev == there.Dev && here.Ino == there.Ino, nil
}
