package nlconn

import (
	"errors"
	"fmt"
	"syscall"
)

// Error is an error the kernel returned for one netlink request. It wraps the
// errno, so errors.Is(err, fs.ErrExist), errors.Is(err, fs.ErrNotExist) and
// errors.Is(err, unix.EINVAL) work.
type Error struct {
	// Errno is the kernel's error number (positive).
	Errno syscall.Errno
	// Message is the kernel's extended-ack message, if it sent one.
	Message string
	// Offset is the extended-ack offset of the offending attribute within
	// the request, or 0.
	Offset int
	// Sequence is the sequence number of the request that failed.
	Sequence uint32
}

func (e *Error) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%v (kernel says: %s)", e.Errno, e.Message)
	}
	return e.Errno.Error()
}

// Unwrap returns the errno.
func (e *Error) Unwrap() error { return e.Errno }

// ErrNotSent is wrapped by the per-request error of a batch request that was
// never sent, because an earlier one failed under BatchOptions.StopOnError or
// the batch was cut short.
var ErrNotSent = errors.New("request not sent")

// ErrClosed is returned by calls on a closed Conn.
var ErrClosed = errors.New("netlink connection closed")

// ErrRepliesLost is wrapped (together with ENOBUFS) when the kernel dropped
// replies because the socket's receive buffer overflowed: some requests'
// outcomes are unknown.
var ErrRepliesLost = errors.New("netlink replies lost: receive buffer overrun")

// ctxError wraps a context error with what was being done.
type ctxError struct {
	op  string
	err error // context.Canceled or context.DeadlineExceeded
}

func (e *ctxError) Error() string { return fmt.Sprintf("netlink %s: %v", e.op, e.err) }
func (e *ctxError) Unwrap() error { return e.err }
