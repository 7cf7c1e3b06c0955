package ipvs

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/internal/nlconn"
)

// ErrNotSupported is wrapped by errors that say the kernel (or the operating
// system) lacks IPVS or one of its features; the error names the module.
var ErrNotSupported = inet.ErrNotSupported

// ErrNotSent is wrapped by the error of a batch request that was never sent
// (Batch.StopOnError, or a batch cut short by its context).
var ErrNotSent = nlconn.ErrNotSent

// Error is a failed operation on one object. It wraps the cause: the errno
// from the kernel (so errors.Is(err, fs.ErrExist), errors.Is(err,
// fs.ErrNotExist) and errors.Is(err, unix.EINVAL) work), a context error, or
// a *ValidationError.
type Error struct {
	// Op is what was being done: "add service", "delete destination", ...
	Op string
	// Object names the object, e.g. "tcp 198.18.0.1:80" or
	// "tcp 198.18.0.1:80 destination 198.18.1.1:8080"; empty for
	// namespace-wide operations.
	Object string
	// Message is the kernel's extended-ack message, if it sent one.
	Message string
	// Err is the cause.
	Err error
}

func (e *Error) Error() string { return "ipvs: " + e.text() }

// text is the message without the package prefix, for errors that hold
// this one and say "ipvs:" themselves (BatchError).
func (e *Error) text() string {
	s := e.Op
	if e.Object != "" {
		s += " " + e.Object
	}
	return s + ": " + e.Err.Error()
}

// unprefixed is err's message without "ipvs: " when err is an *Error.
func unprefixed(err error) string {
	if e, ok := err.(*Error); ok {
		return e.text()
	}
	return err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, fs.ErrNotExist) hold for ESRCH too: the kernel
// reports a missing service with ESRCH (and a missing destination with
// ENOENT, which the errno itself maps).
func (e *Error) Is(target error) bool {
	if target != fs.ErrNotExist {
		return false
	}
	var errno syscall.Errno
	return errors.As(e.Err, &errno) && errno == syscall.ESRCH
}

// newError wraps err for op on object, lifting the kernel's extended-ack
// message. It returns nil for a nil err.
func newError(op, object string, err error) error {
	if err == nil {
		return nil
	}
	e := &Error{Op: op, Object: object, Err: err}
	var ke *nlconn.Error
	if errors.As(err, &ke) {
		e.Message = ke.Message
	}
	return e
}

// ValidationError is a refused argument: nothing was sent to the kernel. It
// wraps EINVAL, so errors.Is(err, unix.EINVAL) holds for bad input whether the
// library or the kernel caught it.
type ValidationError struct {
	Field  string // e.g. "Service.Scheduler"
	Value  any    // the bad value
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("invalid %s %v: %s", e.Field, e.Value, e.Reason)
}

// Fields returns the one refused value; it makes every ValidationError an
// inet.InputError.
func (e *ValidationError) Fields() []inet.FieldError {
	return []inet.FieldError{{Path: e.Field, Value: fmt.Sprint(e.Value), Reason: e.Reason}}
}

// Unwrap returns syscall.EINVAL.
func (e *ValidationError) Unwrap() error { return syscall.EINVAL }

func invalid(field string, value any, format string, args ...any) error {
	return &ValidationError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// BatchError reports the requests of a batch that failed. Every other request
// was applied. It unwraps to each failure, so errors.Is(err, fs.ErrExist)
// holds when any request failed with EEXIST.
type BatchError struct {
	// Failed lists the failed requests in batch order.
	Failed []FailedOp
	// Total is the number of requests in the batch.
	Total int
	// Err, if not nil, is what cut the batch short (its context, or a
	// socket failure). Then the outcome of the requests in flight is
	// unknown and requests never sent are listed in Failed with errors
	// wrapping ErrNotSent.
	Err error
}

// FailedOp is one failed request of a batch.
type FailedOp struct {
	Index int   // position in Batch.Ops
	Op    Op    // the request
	Err   error // an *Error
}

func (e *BatchError) Error() string {
	s := "ipvs: batch:"
	if e.Err != nil {
		s += " cut short: " + unprefixed(e.Err) + ";"
	}
	s += fmt.Sprintf(" %d of %d requests failed", len(e.Failed), e.Total)
	if len(e.Failed) > 0 {
		s += fmt.Sprintf("; first (#%d): %s", e.Failed[0].Index, unprefixed(e.Failed[0].Err))
	}
	return s
}

// Unwrap returns Err (if set) and each failure's error.
func (e *BatchError) Unwrap() []error {
	var errs []error
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	for _, f := range e.Failed {
		errs = append(errs, f.Err)
	}
	return errs
}
