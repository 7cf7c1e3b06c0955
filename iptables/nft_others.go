//go:build !linux

package iptables

import (
	"context"
	"fmt"
	"runtime"
)

// nftBackend exists only on Linux.
type nftBackend struct {
	table struct{ Name string }
	mark  string
}

func newNFTBackend(cfg *NFTablesConfig) (*nftBackend, error) {
	return nil, fmt.Errorf("nftables back end on %s: %w", runtime.GOOS, ErrNotSupported)
}

func (b *nftBackend) apply(ctx context.Context, r *Ruleset, full bool) error { return b.unsupported() }
func (b *nftBackend) repair(ctx context.Context) error                       { return b.unsupported() }
func (b *nftBackend) cleanup(ctx context.Context) error                      { return b.unsupported() }
func (b *nftBackend) close() error                                           { return nil }
func (b *nftBackend) check(ctx context.Context) ([]Drift, error)             { return nil, b.unsupported() }
func (b *nftBackend) owned(ctx context.Context) (*Ruleset, error)            { return nil, b.unsupported() }
func (b *nftBackend) lastStats() ApplyStats                                  { return ApplyStats{} }

func (b *nftBackend) unsupported() error {
	return fmt.Errorf("nftables back end on %s: %w", runtime.GOOS, ErrNotSupported)
}
