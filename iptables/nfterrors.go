package iptables

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// RuleError says the kernel refused a rule of the nftables back end's
// table: the chain it is in, the rule in nft syntax, and the kernel modules
// its expressions need. When one of those modules is missing (Missing),
// errors.Is(err, ErrNotSupported) is true and the kernel's errno (ENOENT or
// EOPNOTSUPP) is not unwrapped, so the error does not read as
// fs.ErrNotExist; otherwise (for example a rule naming a set that does not
// exist) it unwraps to the kernel's answer.
type RuleError struct {
	Table   string   // e.g. "ip ipvskit"
	Chain   string   // e.g. "services"
	Rule    string   // e.g. "fib daddr type local accept"
	Modules []string // e.g. ["nf_tables", "nft_fib_ipv4"]
	Missing string   // the module the kernel lacks, or ""
	Err     error    // the kernel's answer to the rule sent alone
}

func (e *RuleError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "nftables: table %s: chain %s: rule %q refused (needs %s)", e.Table, e.Chain, e.Rule, strings.Join(e.Modules, ", "))
	if e.Missing != "" {
		fmt.Fprintf(&b, ": module %s missing", e.Missing)
	}
	var errno syscall.Errno
	if errors.As(e.Err, &errno) {
		return b.String() + ": " + errno.Error()
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the kernel's answer, unless a module is missing.
func (e *RuleError) Unwrap() error {
	if e.Missing != "" {
		return nil
	}
	return e.Err
}

// Is reports whether target is ErrNotSupported and a module is missing.
func (e *RuleError) Is(target error) bool { return e.Missing != "" && target == ErrNotSupported }
