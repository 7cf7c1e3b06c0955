package proxier

import (
	"errors"
	"strings"

	"github.com/ipvskit/ipvskit/proxier/internal/statefile"
)

// DecodeOptions say how DecodeStateWith reads a State.
type DecodeOptions struct {
	// Key is where the State is in a larger document, such as a program's
	// own configuration file: the keys leading to its value, joined by
	// dots ("state", "lb.state"). Empty means the document is a State.
	// The rest of the document is not read. Every problem's Path starts
	// with Key (state.services["web"].ports[0].port), and its Line is the
	// document's.
	Key string
	// Validate validates the State against Config, as State.Validate
	// does, in the same pass as decoding.
	Validate bool
	// Config is what Validate validates against; nil is the zero Config.
	Config *Config
}

// DecodeStateWith reads a State from its text form as DecodeState does,
// as o says (nil: as DecodeState). It returns a *ValidationError listing
// every problem it finds: those of form and, with o.Validate, those of
// value, found in the same pass on what could be read. Each problem's Line
// is the line of its value in data, or of the nearest enclosing value the
// data gives for a default it leaves out (a missing port list is placed
// at its service). A problem of value at, inside or around a value whose
// form is wrong is left out: it would be about the zero value that stands
// in for it. With o.Validate, an invalid o.Config is returned as
// Config.Validate reports it, before anything is read.
func DecodeStateWith(data []byte, o *DecodeOptions) (*State, error) {
	if o == nil {
		o = &DecodeOptions{}
	}
	c := o.Config
	if c == nil {
		c = &Config{}
	}
	if o.Validate {
		if err := c.Validate(); err != nil {
			return nil, err
		}
	}
	t, formProblems, lines := statefile.DecodeAt(data, o.Key)
	problems := problemsOf(formProblems)
	if t == nil {
		return nil, &ValidationError{Problems: problems}
	}
	s := stateFrom(t)
	if o.Validate {
		problems = append(problems, valueProblems(s, c, o.Key, lines, problems)...)
	}
	if len(problems) > 0 {
		return nil, &ValidationError{Problems: problems}
	}
	return s, nil
}

// valueProblems validates s against c and returns its problems, each put
// under key and placed by lines (whose paths start with key), but for
// those near a problem of form.
func valueProblems(s *State, c *Config, key string, lines statefile.Lines, form []Problem) []Problem {
	var ve *ValidationError
	if !errors.As(s.Validate(c), &ve) {
		return nil // Validate returns a *ValidationError or nil
	}
	var out []Problem
	for _, p := range ve.Problems {
		if key != "" {
			p.Path = key + "." + p.Path
		}
		if nearAny(p.Path, form) {
			continue
		}
		if p.Line == 0 {
			p.Line = lines.Of(p.Path)
		}
		out = append(out, p)
	}
	return out
}

// nearAny says whether path is, is inside or holds the path of one of
// problems, in any case (a field named in the wrong case is a problem of
// form, and its value is missing from what was decoded).
func nearAny(path string, problems []Problem) bool {
	for _, p := range problems {
		if within(path, p.Path) || within(p.Path, path) {
			return true
		}
	}
	return false
}

// within says whether path is outer or a path inside it.
func within(path, outer string) bool {
	if len(path) < len(outer) || !strings.EqualFold(path[:len(outer)], outer) {
		return false
	}
	return len(path) == len(outer) || path[len(outer)] == '.' || path[len(outer)] == '['
}
