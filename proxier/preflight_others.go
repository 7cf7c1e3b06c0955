//go:build !linux

package proxier

import (
	"context"
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

func preflight(context.Context, *Config, netns.NsHandle, *PreflightOptions) error {
	return fmt.Errorf("proxier: preflight on %s: %w", runtime.GOOS, ErrNotSupported)
}
