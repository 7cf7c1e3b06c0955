//go:build !linux

package ipset

import (
	"fmt"
	"runtime"
)

func newClient(cfg *Config) (*client, error) {
	return nil, fmt.Errorf("ipset on %s: %w", runtime.GOOS, ErrNotSupported)
}
