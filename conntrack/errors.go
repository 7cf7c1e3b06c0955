package conntrack

import (
	"fmt"
	"strings"

	"github.com/ipvskit/ipvskit/inet"
)

// ErrNotSupported is wrapped by errors that say the kernel lacks ctnetlink
// (module nf_conntrack_netlink) or the operating system lacks netlink. It
// is the same value in every ipvskit package.
var ErrNotSupported = inet.ErrNotSupported

// ValidationError says that a Filter is invalid. Nothing was sent to the
// kernel.
type ValidationError struct {
	Field  string // "filters[2].Protocol", "filters[0].Keep[1]"
	Value  string // the value, as text
	Reason string // what is wrong with it
}

// validateFilters validates each filter, naming a bad one's field with its
// index: "filters[2].Protocol".
func validateFilters(filters []Filter) error {
	for i := range filters {
		if err := filters[i].Validate(); err != nil {
			if ve, ok := err.(*ValidationError); ok {
				ve.Field = "filters[" + itoa(i) + "]." + ve.Field
			}
			return err
		}
	}
	return nil
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("conntrack: invalid %s %q: %s", e.Field, e.Value, e.Reason)
}

// Fields returns the one refused value; it makes every ValidationError an
// inet.InputError.
func (e *ValidationError) Fields() []inet.FieldError {
	return []inet.FieldError{{Path: e.Field, Value: e.Value, Reason: e.Reason}}
}

// Error is returned by Delete when the kernel refused something. It wraps
// the cause, so that errors.Is works against the kernel's errno,
// fs.ErrPermission, ErrNotSupported, fs.ErrClosed (a closed Client) and
// context.Canceled or context.DeadlineExceeded.
type Error struct {
	// Op is "dump" (listing the table) or "delete".
	Op string
	// Family is the table's family dumped or deleted from.
	Family Family
	// Flow is, for a delete, the first flow the kernel refused to delete.
	Flow Flow
	// Failed is, for a delete, how many flows could not be deleted.
	Failed int
	// Err is the (first) cause.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "conntrack: %s %v", e.Op, e.Family)
	if e.Op == "delete" && e.Flow.Protocol != 0 {
		fmt.Fprintf(&b, " [%v]", e.Flow)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	if e.Failed > 1 {
		fmt.Fprintf(&b, " (and %d more flows not deleted)", e.Failed-1)
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }
