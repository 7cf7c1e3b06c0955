package proxier

import (
	"bytes"
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// DecodeState reads a State from its text form: JSON if the first byte that
// is not white space is '{', YAML otherwise. It returns a *ValidationError
// listing every problem of form it finds, and does not validate the values
// (see State.Validate and DecodeValidState). An empty document is an
// error, not an empty State (a State with no services is written {}), so
// that a file truncated to nothing does not remove every service.
func DecodeState(data []byte) (*State, error) {
	var (
		root *textValue
		p    *Problem
	)
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
		root, p = jsonTree(data)
	} else {
		root, p = yamlTree(data)
	}
	if p != nil {
		return nil, &ValidationError{Problems: []Problem{*p}}
	}
	return decodeTree(root)
}

// DecodeValidState reads a State as DecodeState does and validates it
// against c, as State.Validate does (a nil c is the zero Config): a
// *ValidationError lists the problems of form, or if there are none, those
// of value. An invalid c is returned as Config.Validate reports it.
func DecodeValidState(data []byte, c *Config) (*State, error) {
	if c == nil {
		c = &Config{}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s, err := DecodeState(data)
	if err != nil {
		return nil, err
	}
	if err := s.Validate(c); err != nil {
		return nil, err
	}
	return s, nil
}

// EncodeStateYAML writes s in its YAML text form, indented by two spaces;
// DecodeState reads it back as s. Zero values are left out; services are
// sorted by ID, an endpoint's ports by name.
func EncodeStateYAML(s *State) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	err := enc.Encode(s.text())
	if err == nil {
		err = enc.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("proxier: writing a State as YAML: %w", err)
	}
	return b.Bytes(), nil
}

// MarshalJSON writes s in its JSON text form, so that encoding/json
// writes a State, or a value that holds one, in the designed form.
func (s State) MarshalJSON() ([]byte, error) {
	return json.Marshal(s.text())
}

// UnmarshalJSON reads s from its JSON text form as DecodeState does, so
// that encoding/json reads a State, or a value that holds one, in the
// designed form. Errors are *ValidationError, with paths and lines
// counted from the start of the State's own value; null leaves s as it is.
func (s *State) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	root, p := jsonTree(data)
	if p != nil {
		return &ValidationError{Problems: []Problem{*p}}
	}
	return s.set(decodeTree(root))
}

// MarshalYAML gives go.yaml.in/yaml/v3 the YAML text form of s, so that
// it writes a State, or a value that holds one, in the designed form.
func (s State) MarshalYAML() (any, error) {
	return s.text(), nil
}

// UnmarshalYAML reads s from its YAML text form as DecodeState does, so
// that go.yaml.in/yaml/v3 reads a State, or a value that holds one, in the
// designed form. Errors are *ValidationError, with the document's lines;
// null leaves s as it is.
func (s *State) UnmarshalYAML(value *yaml.Node) error {
	if value.Kind == yaml.ScalarNode && value.ShortTag() == "!!null" {
		return nil
	}
	root, p := yamlNodeTree(value, 0)
	if p != nil {
		return &ValidationError{Problems: []Problem{*p}}
	}
	return s.set(decodeTree(root))
}

func (s *State) set(decoded *State, err error) error {
	if err != nil {
		return err
	}
	*s = *decoded
	return nil
}
