package proxier

import "github.com/ipvskit/ipvskit/inet"

// Fields returns each problem as an inet.FieldError, which makes a
// ValidationError an inet.InputError like every ipvskit package's.
func (e *ValidationError) Fields() []inet.FieldError {
	fs := make([]inet.FieldError, len(e.Problems))
	for i, p := range e.Problems {
		fs[i] = inet.FieldError{Path: p.Path, Value: p.Value, Reason: p.Msg}
	}
	return fs
}
