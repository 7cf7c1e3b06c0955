//go:build !linux

package iptables

import "context"

func (b *nftBackend) probeAll(ctx context.Context) error { return b.unsupported() }

// probeExtensions is never reached: the iptables back end exists only on
// Linux.
func (b *iptBackend) probeExtensions(context.Context) []error { return nil }
