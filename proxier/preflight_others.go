//go:build !linux

package proxier

import (
	"context"
	"fmt"
	"runtime"
)

func preflight(context.Context, *Config, int, *PreflightOptions) error {
	return fmt.Errorf("proxier: preflight on %s: %w", runtime.GOOS, ErrNotSupported)
}
