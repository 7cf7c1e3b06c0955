package iptables

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/ipvskit/ipvskit/inet"
)

// ErrNotSupported is wrapped by errors that say the system lacks something a
// back end needs (nf_tables, an iptables binary, ipset); the wrapping error
// names it.
var ErrNotSupported = inet.ErrNotSupported

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

// Fields returns the one refused value; it makes every ValidationError an
// inet.InputError.
func (e *ValidationError) Fields() []inet.FieldError {
	return []inet.FieldError{{Path: e.Field, Value: e.Value, Reason: e.Reason}}
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

// RestoreError says iptables-restore refused what the back end sent: the
// line it names (its number, the table it is in and its text, as sent) and,
// when its messages say that a match or target is missing from the kernel,
// the module that provides it. With a Module, errors.Is(err,
// ErrNotSupported) is true.
type RestoreError struct {
	Binary string // e.g. "iptables-nft-restore"
	Line   int    // 1-based line of the input; 0 if the binary named none
	Table  string // the table that line is in, e.g. "nat"
	Text   string // the line as sent, e.g. "-A IPVSKIT-SERVICES ..."
	Module string // e.g. "xt_set"; "" if nothing says a module is missing
	Err    error  // the binary's exit status and messages
}

func (e *RestoreError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "iptables: %s", e.Binary)
	if e.Line > 0 {
		fmt.Fprintf(&b, ": line %d (table %s) failed: %s", e.Line, e.Table, e.Text)
	}
	if e.Module != "" {
		fmt.Fprintf(&b, ": the kernel lacks a match or target (module %s)", e.Module)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

// Unwrap returns the binary's error.
func (e *RestoreError) Unwrap() error { return e.Err }

// Is reports whether target is ErrNotSupported and a module is missing.
func (e *RestoreError) Is(target error) bool { return e.Module != "" && target == ErrNotSupported }
