//go:build !linux

package ipvs

import "context"

func (*client) probeScheduler(context.Context, string) error { return errOS }
