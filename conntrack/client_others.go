//go:build !linux

package conntrack

import (
	"fmt"
	"runtime"

	"github.com/ipvskit/ipvskit/internal/nlconn"
)

func dial(*Config) (nlconn.Transport, error) {
	return nil, fmt.Errorf("conntrack on %s: %w", runtime.GOOS, ErrNotSupported)
}
