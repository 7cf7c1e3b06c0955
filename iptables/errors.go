package iptables

import (
	"fmt"

	"github.com/ipvskit/ipvskit/internal/kerr"
)

// ErrNotSupported is wrapped by errors that say the system lacks something a
// back end needs (nf_tables, an iptables binary, ipset); the wrapping error
// names it.
var ErrNotSupported = kerr.ErrNotSupported

// ValidationError says which field of a Ruleset (or a back end's Config) has
// a bad value. Nothing is applied when a Ruleset fails validation.
type ValidationError struct {
	Field  string // e.g. "Options.MasqueradeMark" or "cluster-ip[198.18.0.1,tcp:0].Port"
	Value  string
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("iptables: invalid %s %q: %s", e.Field, e.Value, e.Reason)
}
