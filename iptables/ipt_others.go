//go:build !linux

package iptables

import (
	"context"
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

func newIPTBackend(cfg *IPTablesConfig) (*iptBackend, error) {
	return nil, fmt.Errorf("iptables back end on %s: %w", runtime.GOOS, ErrNotSupported)
}

func cleanupIPTablesObjects(ctx context.Context, ns netns.NsHandle, fam Family, instance string, kubeProxy bool) error {
	return fmt.Errorf("iptables back end on %s: %w", runtime.GOOS, ErrNotSupported)
}
