package sysctl

import (
	"fmt"
	"io/fs"

	"github.com/ipvskit/ipvskit/inet"
)

// ErrNotSupported is wrapped by errors that say the kernel lacks a key
// because a module is not loaded, or that the operating system has no
// sysctls. It is the same value in every ipvskit package.
var ErrNotSupported = inet.ErrNotSupported

// Error is returned when the kernel refuses to read or write a key. It wraps
// the cause, so errors.Is works against fs.ErrPermission, the errno (EINVAL
// for a value the key does not accept), context.Canceled and
// context.DeadlineExceeded.
type Error struct {
	Op    string // "get" or "set"
	Key   string // the key, as a path below /proc/sys
	Value string // the value, for "set"
	Err   error
}

func (e *Error) Error() string {
	if e.Op == "set" {
		return fmt.Sprintf("sysctl: set %s = %q: %v", e.Key, e.Value, e.Err)
	}
	return fmt.Sprintf("sysctl: %s %s: %v", e.Op, e.Key, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// NotExistError says that a key does not exist in the namespace: the module
// that provides it is not loaded, or the interface it is about does not
// exist there. It matches fs.ErrNotExist with errors.Is, and ErrNotSupported
// too when a module is missing.
type NotExistError struct {
	Key       string // the key, as a path below /proc/sys
	Module    string // the module that provides the key, if known ("ip_vs", "br_netfilter")
	Interface string // for per-interface keys (net/ipv4/conf/<if>/...): the interface
}

func (e *NotExistError) Error() string {
	switch {
	case e.Interface != "":
		return fmt.Sprintf("sysctl: %s does not exist: no interface %q in the namespace", e.Key, e.Interface)
	case e.Module != "":
		return fmt.Sprintf("sysctl: %s does not exist: module %s is not loaded: %v", e.Key, e.Module, ErrNotSupported)
	}
	return fmt.Sprintf("sysctl: %s does not exist", e.Key)
}

// Is makes errors.Is match fs.ErrNotExist, and ErrNotSupported if a module
// is missing.
func (e *NotExistError) Is(target error) bool {
	return target == fs.ErrNotExist || (target == ErrNotSupported && e.Module != "")
}

// ValidationError says that an argument is invalid. Nothing was read or
// written.
type ValidationError struct {
	Field  string // "key", "value", "profile[2].Key", "ARPInterfaces[0]"
	Value  string // the invalid value
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("sysctl: invalid %s %q: %s", e.Field, e.Value, e.Reason)
}

// Fields returns the one refused value; it makes every ValidationError an
// inet.InputError.
func (e *ValidationError) Fields() []inet.FieldError {
	return []inet.FieldError{{Path: e.Field, Value: e.Value, Reason: e.Reason}}
}
