//go:build !linux

package dummy

import "context"

func (*client) probe(context.Context) error { return errOS() }
