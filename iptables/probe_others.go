//go:build !linux

package iptables

import "context"

func (b *nftBackend) probeAll(ctx context.Context) error { return b.unsupported() }
