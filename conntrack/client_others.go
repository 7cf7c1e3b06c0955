//go:build !linux

package conntrack

import (
	"fmt"
	"runtime"
)

func dial(*Config) (conn, error) {
	return nil, fmt.Errorf("conntrack on %s: %w", runtime.GOOS, ErrNotSupported)
}
