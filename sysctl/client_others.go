//go:build !linux

package sysctl

import (
	"context"
	"fmt"
	"runtime"
)

func errOS() error {
	return fmt.Errorf("sysctl: network namespace sysctls on %s: %w", runtime.GOOS, ErrNotSupported)
}

type noStore struct{}

func newStore(*Config) (noStore, error) { return noStore{}, errOS() }

func (noStore) do(context.Context, func(keyRW) error) error { return errOS() }
func (noStore) close() error                                { return errOS() }

func uname() (string, error) { return "", errOS() }
