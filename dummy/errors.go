package dummy

import (
	"fmt"
	"io/fs"
	"net/netip"
	"strings"

	"github.com/ipvskit/ipvskit/inet"
)

// ErrNotSupported is wrapped by errors that say the kernel or the operating
// system lacks dummy links. It is the same value in every ipvskit package.
var ErrNotSupported = inet.ErrNotSupported

// Error is returned by every Client method that reached the kernel. It names
// the operation, the link and, for address operations, the address, and wraps
// the cause, so that errors.Is works against fs.ErrExist (address already
// bound, or the name taken by a link of another type), fs.ErrNotExist (no such
// link, or address not bound), ErrNotSupported (no dummy link type in the
// kernel), the kernel's errno, and context.Canceled or
// context.DeadlineExceeded.
type Error struct {
	Op   string       // "ensure", "addrs", "bind", "unbind", "sync", "update", "routes", "update routes", "add route", "remove route" or "delete"
	Link string       // the link's name
	Addr netip.Prefix // the address, if the operation was on one
	Err  error        // the cause
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("dummy: ")
	b.WriteString(e.Op)
	if e.Addr.IsValid() {
		b.WriteString(" ")
		b.WriteString(e.Addr.String())
		b.WriteString(" on")
	}
	fmt.Fprintf(&b, " %q: %v", e.Link, e.Err)
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// LinkTypeError says that a link of the wanted name exists but is not a dummy
// link. Clients never change or delete such a link: it belongs to someone
// else. It matches fs.ErrExist with errors.Is.
type LinkTypeError struct {
	Name string // the link's name
	Type string // its kind, as "ip -d link" shows it ("bridge", "veth", ...; "device" for a link without a kind)
}

func (e *LinkTypeError) Error() string {
	return fmt.Sprintf("link %q exists and is of type %q, not dummy: not taking it over", e.Name, e.Type)
}

// Is makes errors.Is(err, fs.ErrExist) true: the name is taken.
func (e *LinkTypeError) Is(target error) bool { return target == fs.ErrExist }

// ForeignError says that a dummy link of the wanted name exists without the
// Client's mark (its alias is not Config.Owner): another program's, or one
// made before marks existed. Clients never change or delete such a link, nor
// any address on it. It matches fs.ErrExist with errors.Is.
type ForeignError struct {
	Name  string // the link's name
	Alias string // its alias ("" for none)
	Owner string // the mark the Client looked for
}

func (e *ForeignError) Error() string {
	found := "no alias"
	if e.Alias != "" {
		found = fmt.Sprintf("alias %q", e.Alias)
	}
	return fmt.Sprintf("dummy link %q exists with %s, not the mark %q: not ours, left as it is", e.Name, found, e.Owner)
}

// Is makes errors.Is(err, fs.ErrExist) true: the name is taken.
func (e *ForeignError) Is(target error) bool { return target == fs.ErrExist }

// ValidationError says that an argument is invalid. Nothing was sent to the
// kernel.
type ValidationError struct {
	Field  string // the argument: "name", "addr", "wanted[3]"
	Value  string // its value, as text
	Reason string // what is wrong with it
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("dummy: invalid %s %q: %s", e.Field, e.Value, e.Reason)
}

// Fields returns the one refused value; it makes every ValidationError an
// inet.InputError.
func (e *ValidationError) Fields() []inet.FieldError {
	return []inet.FieldError{{Path: e.Field, Value: e.Value, Reason: e.Reason}}
}

// notExist marks a cause as fs.ErrNotExist for errors.Is while keeping its
// text and chain (the kernel says ENODEV or EADDRNOTAVAIL, which the standard
// library does not map to fs.ErrNotExist).
type notExist struct{ err error }

func (e notExist) Error() string        { return e.err.Error() }
func (e notExist) Unwrap() error        { return e.err }
func (e notExist) Is(target error) bool { return target == fs.ErrNotExist }
