//go:build linux

package sysctl

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sync"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// procStore reads and writes /proc/sys from threads inside one namespace.
type procStore struct {
	mu sync.RWMutex // held for reading during do, for writing by close
	ns netns.NsHandle
}

func newStore(cfg *Config) (*procStore, error) {
	var (
		h   netns.NsHandle
		err error
	)
	if cfg.NetNS == 0 {
		h, err = netns.Get()
	} else {
		var fd int
		fd, err = unix.FcntlInt(uintptr(cfg.NetNS), unix.F_DUPFD_CLOEXEC, 0)
		h = netns.NsHandle(fd)
	}
	if err != nil {
		return nil, fmt.Errorf("sysctl: keeping a handle on the network namespace: %w", err)
	}
	return &procStore{ns: h}, nil
}

func (s *procStore) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ns.IsOpen() {
		return fmt.Errorf("sysctl: close: %w", fs.ErrClosed)
	}
	err := s.ns.Close()
	s.ns = netns.None()
	return err
}

// do runs f on a new OS thread that has entered the namespace. The thread
// stays locked when its goroutine ends, so the runtime discards it instead
// of reusing a thread in another namespace. A thread that is already in the
// namespace (the zero Config, normally) is not moved, which needs no
// privilege.
func (s *procStore) do(ctx context.Context, f func(rw keyRW) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.ns.IsOpen() {
		return fs.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: see above.
		here, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("reading the thread's network namespace: %w", err)
			return
		}
		same := here.Equal(s.ns)
		here.Close()
		if !same {
			if err := netns.Set(s.ns); err != nil {
				errc <- fmt.Errorf("entering the network namespace: %w", err)
				return
			}
		}
		errc <- f(procRW{})
	}()
	return <-errc
}

// procRW is used only on a thread inside the namespace.
type procRW struct{}

func (procRW) get(key string) (string, error) {
	b, err := os.ReadFile("/proc/sys/" + key)
	return string(b), err
}

func (procRW) set(key, value string) error {
	f, err := os.OpenFile("/proc/sys/"+key, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func uname() (string, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", err
	}
	return unix.ByteSliceToString(u.Release[:]), nil
}
