//go:build !linux

package proxier

import (
	"context"
	"fmt"
	"runtime"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/vishvananda/netns"
)

// openDeps fails: the kernel clients exist only on Linux.
func openDeps(context.Context, *Config, netns.NsHandle) (Deps, closers, error) {
	return Deps{}, nil, fmt.Errorf("proxier: Open on %s: %w", runtime.GOOS, inet.ErrNotSupported)
}
