// Package kerr holds what ipvskit's packages share about the kernel's
// features and that users must not import: the named, cached feature probes
// (Feature, Probes). The errors they return are public, in package inet
// (inet.ErrNotSupported, inet.UnsupportedFeatureError), because users
// match on them; the names below are aliases kept for code written against
// this package before the errors moved.
package kerr

import "github.com/ipvskit/ipvskit/inet"

// ErrNotSupported is inet.ErrNotSupported.
var ErrNotSupported = inet.ErrNotSupported

// UnsupportedFeatureError is inet.UnsupportedFeatureError.
type UnsupportedFeatureError = inet.UnsupportedFeatureError
