// Package kerr holds the error values every ipvskit package shares. Each
// public package re-exports them by alias (var ErrNotSupported =
// kerr.ErrNotSupported), so errors.Is works across packages.
package kerr

import "errors"

// ErrNotSupported is wrapped by every error that says the running kernel (or
// operating system) lacks a feature. The wrapping error names the feature and
// the module that provides it.
var ErrNotSupported = errors.New("not supported")
