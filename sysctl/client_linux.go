//go:build linux

package sysctl

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/ipvskit/ipvskit/internal/nsfd"
	"golang.org/x/sys/unix"
)

// procStore reads and writes /proc/sys from threads inside one namespace.
type procStore struct {
	mu sync.RWMutex // held for reading during do, for writing by close
	fd int          // our descriptor of the namespace; -1 once closed
}

func newStore(cfg *Config) (*procStore, error) {
	fd, err := nsfd.Open(int(cfg.NetNS))
	if err != nil {
		return nil, fmt.Errorf("sysctl: keeping a handle on the network namespace: %w", err)
	}
	return &procStore{fd: fd}, nil
}

func (s *procStore) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd < 0 {
		return fmt.Errorf("sysctl: close: %w", fs.ErrClosed)
	}
	err := unix.Close(s.fd)
	s.fd = -1
	return err
}

// do runs f on a fresh OS thread inside the namespace (see nsfd.Do: the
// thread is discarded afterwards, and one already there is not moved).
func (s *procStore) do(ctx context.Context, f func(rw keyRW) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.fd < 0 {
		return fs.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return nsfd.Do(s.fd, func() error { return f(procRW{}) })
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
