package iptables

import (
	"fmt"
	"io/fs"

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

// ForeignError says that an object a back end would write or delete exists
// without the back end's ownership mark: another program's, or an earlier
// ipvskit version's. The back end changed nothing; it never changes or
// deletes an object it cannot prove it made. errors.Is(err, fs.ErrExist)
// is true (the name is taken).
type ForeignError struct {
	Kind   string // "table", "chain", "ipset", "rule"
	Name   string // e.g. "ip ipvskit", "nat IPVSKIT-SERVICES", "IPVSKIT-CLUSTER-IP"
	Reason string // what was found, e.g. "no set with comment \"ipvskit:ipvskit\""
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("iptables: %s %s exists and is not ours (%s): left as it is", e.Kind, e.Name, e.Reason)
}

// Is reports whether target is fs.ErrExist.
func (e *ForeignError) Is(target error) bool { return target == fs.ErrExist }
