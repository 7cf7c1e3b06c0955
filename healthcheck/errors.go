package healthcheck

import (
	"errors"
	"strings"

	"github.com/ipvskit/ipvskit/inet"
)

// ErrMismatch is wrapped by a check's error when the server answered, but
// not as expected: an HTTP status or body, a DNS response code.
var ErrMismatch = errors.New("unexpected answer")

// ErrClosed is returned by the methods of a closed Checker.
var ErrClosed = errors.New("healthcheck: checker closed")

// ValidationError says that a configuration or target was refused; nothing
// changed. It is an inet.InputError.
type ValidationError struct {
	Refused []inet.FieldError // at least one
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("healthcheck: invalid ")
	for i, f := range e.Refused {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.String())
	}
	return b.String()
}

// Fields returns the refused values.
func (e *ValidationError) Fields() []inet.FieldError { return e.Refused }

// refusals collects FieldErrors under a path prefix.
type refusals struct {
	prefix string
	list   []inet.FieldError
}

func (r *refusals) add(field, value, reason string) {
	r.list = append(r.list, inet.FieldError{Path: r.prefix + field, Value: value, Reason: reason})
}

func (r *refusals) err() error {
	if len(r.list) == 0 {
		return nil
	}
	return &ValidationError{Refused: r.list}
}
