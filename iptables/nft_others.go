//go:build !linux

package iptables

import (
	"context"
	"fmt"
	"runtime"
)

// nftBackend exists only on Linux.
type nftBackend struct {
	syncEngine
	table struct{ Name string }
	mark  string
}

func newNFTBackend(cfg *NFTablesConfig) (*nftBackend, error) {
	return nil, fmt.Errorf("nftables back end on %s: %w", runtime.GOOS, ErrNotSupported)
}

func (b *nftBackend) kind() string                                    { return "nftables" }
func (b *nftBackend) family() Family                                  { return IPv4 }
func (b *nftBackend) limits(*Ruleset) error                           { return b.unsupported() }
func (b *nftBackend) writeFull(context.Context, *Ruleset, bool) error { return b.unsupported() }
func (b *nftBackend) writeDeltas(context.Context, *Ruleset, *Ruleset, *setDeltas) error {
	return b.unsupported()
}
func (b *nftBackend) drift(context.Context, *Ruleset) ([]ObjectDrift, error) {
	return nil, b.unsupported()
}
func (b *nftBackend) ownLedger(context.Context) (*Ruleset, error) { return nil, b.unsupported() }
func (b *nftBackend) removeOwn(context.Context) error             { return b.unsupported() }
func (b *nftBackend) close() error                                { return nil }

func (b *nftBackend) unsupported() error {
	return fmt.Errorf("nftables back end on %s: %w", runtime.GOOS, ErrNotSupported)
}
