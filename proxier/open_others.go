//go:build !linux

package proxier

import (
	"context"
	"fmt"
	"runtime"

	"github.com/ipvskit/ipvskit/inet"
)

// openDeps fails: the kernel clients exist only on Linux.
func openDeps(context.Context, *Config, int) (Deps, closers, error) {
	return Deps{}, nil, fmt.Errorf("proxier: Open on %s: %w", runtime.GOOS, inet.ErrNotSupported)
}
