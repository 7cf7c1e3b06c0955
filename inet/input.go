package inet

// InputError is the one shape of bad input across ipvskit. Every package's
// ValidationError (ipvs, ipset, iptables, dummy, sysctl, conntrack, proxier)
// implements it, so one errors.As finds a refusal wherever it came from and
// however deep it is wrapped:
//
//	var bad inet.InputError
//	if errors.As(err, &bad) {
//		for _, f := range bad.Fields() {
//			fmt.Printf("%s = %q: %s\n", f.Path, f.Value, f.Reason)
//		}
//	}
//
// An InputError means the input was refused before anything reached the
// kernel: nothing was changed.
type InputError interface {
	error
	// Fields lists each refused value; at least one.
	Fields() []FieldError
}

// FieldError is one refused value: where it is, what it was, and why.
type FieldError struct {
	// Path names the value in the terms of the call that refused it: a
	// field ("Service.Scheduler", "name"), an element ("wanted[2]"), or a
	// path into a document (`services["web"].endpoints[2].addr`).
	Path string
	// Value is the refused value as text ("" when there is none to show,
	// such as a missing field).
	Value string
	// Reason says what is wrong with it.
	Reason string
}

// String returns "path: value: reason", leaving out an empty value.
func (f FieldError) String() string {
	if f.Value == "" {
		return f.Path + ": " + f.Reason
	}
	return f.Path + ": " + quote(f.Value) + ": " + f.Reason
}
