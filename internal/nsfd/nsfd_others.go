//go:build !linux

package nsfd

import (
	"fmt"
	"runtime"

	"github.com/ipvskit/ipvskit/inet"
)

var errOS = fmt.Errorf("network namespaces on %s: %w", runtime.GOOS, inet.ErrNotSupported)

// Open fails: network namespaces exist only on Linux.
func Open(int) (int, error) { return -1, errOS }

// Do fails: network namespaces exist only on Linux.
func Do(int, func() error) error { return errOS }

// IsNet reports false: network namespaces exist only on Linux.
func IsNet(int) (reason string, ok bool) { return errOS.Error(), false }
