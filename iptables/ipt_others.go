//go:build !linux

package iptables

import (
	"fmt"
	"runtime"
)

func newIPTBackend(cfg *IPTablesConfig) (*iptBackend, error) {
	return nil, fmt.Errorf("iptables back end on %s: %w", runtime.GOOS, ErrNotSupported)
}
