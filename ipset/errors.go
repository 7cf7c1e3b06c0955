package ipset

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/ipvskit/ipvskit/inet"
)

// ErrNotSupported is wrapped by errors that say the kernel lacks ipset, a set
// type or a type revision. The wrapping error names the kernel module.
var ErrNotSupported = inet.ErrNotSupported

// Classes of the kernel's ipset-specific error codes (4097 and up). An *Error
// wraps one of them; test with errors.Is.
var (
	// ErrProtocol: the kernel could not parse the request (IPSET_ERR_PROTOCOL).
	ErrProtocol = errors.New("ipset: invalid protocol message")
	// ErrSetFull: the set holds maxelem entries (IPSET_ERR_HASH_FULL).
	ErrSetFull = errors.New("ipset: set is full")
	// ErrElementExists: an add of an element already in the set
	// (IPSET_ERR_EXIST on add). Also matches fs.ErrExist.
	ErrElementExists = errors.New("ipset: element already in the set")
	// ErrElementMissing: a delete of an element not in the set
	// (IPSET_ERR_EXIST on delete). Also matches fs.ErrNotExist.
	ErrElementMissing = errors.New("ipset: element not in the set")
	// ErrSetExists: the target name of a rename is taken
	// (IPSET_ERR_EXIST_SETNAME2). Also matches fs.ErrExist.
	ErrSetExists = errors.New("ipset: a set with that name exists")
	// ErrTypeMismatch: swapped sets differ in type or family
	// (IPSET_ERR_TYPE_MISMATCH).
	ErrTypeMismatch = errors.New("ipset: set types or families differ")
	// ErrInUse: the set is referenced by a rule or being listed
	// (IPSET_ERR_BUSY, IPSET_ERR_REFERENCED, EBUSY).
	ErrInUse = errors.New("ipset: set is in use")
	// ErrMaxSets: the kernel's limit on the number of sets is reached.
	ErrMaxSets = errors.New("ipset: too many sets")
	// ErrInvalidElement: the kernel refused an element's value (range,
	// CIDR, family, protocol).
	ErrInvalidElement = errors.New("ipset: invalid element")
	// ErrNoExtension: an element used an extension (timeout, counters,
	// comment) that the set was not created with.
	ErrNoExtension = errors.New("ipset: set lacks the extension")
)

// Kernel error codes (enum ipset_errno in ip_set.h, ip_set_hash.h,
// ip_set_bitmap.h).
const (
	codeProtocol       = 4097
	codeFindType       = 4098
	codeMaxSets        = 4099
	codeBusy           = 4100
	codeExistSetName2  = 4101
	codeTypeMismatch   = 4102
	codeExist          = 4103
	codeInvalidCIDR    = 4104
	codeInvalidNetmask = 4105
	codeInvalidFamily  = 4106
	codeTimeout        = 4107
	codeReferenced     = 4108
	codeIPAddrIPv4     = 4109
	codeIPAddrIPv6     = 4110
	codeCounter        = 4111
	codeComment        = 4112
	codeMarkmask       = 4113
	codeSkbinfo        = 4114
	codeTypeSpecific   = 4352 // hash: HASH_FULL; bitmap: BITMAP_RANGE
)

// Error is a failed operation. It wraps the cause: one of this package's Err*
// classes for ipset's own codes, or the syscall.Errno, so errors.Is works
// against both and against fs.ErrExist, fs.ErrNotExist and fs.ErrPermission.
type Error struct {
	Op      string // the operation: "create", "add", "swap", ...
	Set     string // the set, when the operation has one
	Entry   string // the element, in ipset notation, when one element failed
	Code    int    // the kernel's error number (errno, or 4097 and up)
	Message string // the kernel's extended-ack message, if it sent one
	Err     error  // the cause
}

func (e *Error) Error() string {
	s := "ipset " + e.Op
	if e.Set != "" {
		s += " " + e.Set
	}
	if e.Entry != "" {
		s += " " + e.Entry
	}
	s += ": " + e.Err.Error()
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Is maps the ipset classes onto the fs errors and EBUSY onto ErrInUse.
func (e *Error) Is(target error) bool {
	switch target {
	case fs.ErrExist:
		return errors.Is(e.Err, ErrElementExists) || errors.Is(e.Err, ErrSetExists)
	case fs.ErrNotExist:
		return errors.Is(e.Err, ErrElementMissing)
	case ErrInUse:
		return errors.Is(e.Err, syscall.EBUSY)
	}
	return false
}

// newError classifies the kernel's error number code (positive) for op on a
// set of type t (TypeUnknown when not known).
func newError(op, set string, t Type, code int, msg string) *Error {
	e := &Error{Op: op, Set: set, Code: code, Message: msg}
	switch {
	case code < 4096:
		e.Err = syscall.Errno(code)
	case code == codeProtocol:
		e.Err = ErrProtocol
	case code == codeFindType:
		e.Err = fmt.Errorf("set type %s or its revision not in the kernel (module %s): %w", t, t.module(), ErrNotSupported)
	case code == codeMaxSets:
		e.Err = ErrMaxSets
	case code == codeBusy, code == codeReferenced:
		e.Err = ErrInUse
	case code == codeExistSetName2 && op == "swap":
		// Swap reuses the code for "the second set does not exist".
		e.Err = fmt.Errorf("the second set does not exist: %w", syscall.ENOENT)
	case code == codeExistSetName2:
		e.Err = ErrSetExists
	case code == codeTypeMismatch:
		e.Err = ErrTypeMismatch
	case code == codeExist && op == "del":
		e.Err = ErrElementMissing
	case code == codeExist:
		e.Err = ErrElementExists
	case code == codeInvalidCIDR, code == codeInvalidNetmask, code == codeInvalidFamily,
		code == codeIPAddrIPv4, code == codeIPAddrIPv6, code == codeMarkmask:
		e.Err = ErrInvalidElement
	case code == codeTimeout, code == codeCounter, code == codeComment, code == codeSkbinfo:
		e.Err = ErrNoExtension
	case code == codeTypeSpecific && t.isHash():
		e.Err = ErrSetFull
	case code >= codeTypeSpecific && t.valid():
		e.Err = ErrInvalidElement
	default:
		e.Err = fmt.Errorf("ipset error code %d", code)
	}
	return e
}

// ValidationError is bad input found before anything was sent to the kernel.
type ValidationError struct {
	Field  string // the field, e.g. "Name" or "entries[3].Port"
	Value  string // the bad value
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("ipset: invalid %s %q: %s", e.Field, e.Value, e.Reason)
}

// Fields returns the one refused value; it makes every ValidationError an
// inet.InputError.
func (e *ValidationError) Fields() []inet.FieldError {
	return []inet.FieldError{{Path: e.Field, Value: e.Value, Reason: e.Reason}}
}
