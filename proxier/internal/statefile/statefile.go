// Package statefile is the text form of a proxier.State, in JSON and in
// YAML (docs/state-format.md): a tree read from either syntax with each
// value's line, the decoder that checks that tree's form and collects every
// problem, and the writer. It knows the form, not the engine: it reads into
// and writes from State, a copy of proxier.State's shape in the form's own
// words, and package proxier converts between the two (proxier.DecodeState,
// EncodeStateYAML and State's JSON and YAML methods), so that the
// encoding/json and go.yaml.in/yaml/v3 methods stay on proxier.State.
package statefile

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Problem is one problem of form, as proxier.Problem holds it.
type Problem struct {
	Path  string // e.g. services["web"].ports[1].nodePort
	Value string // the offending value, as text
	Msg   string // e.g. "is not a number"
	Line  int    // the value's line, from 1; 0 if not known, or for a problem of syntax, whose Path is its line
}

// Decode reads a State from its text form: JSON if the first byte that is
// not white space is '{', YAML otherwise. It returns every problem of form
// it finds (then no State); it does not check the values beyond their
// form. An empty document is a problem, not an empty State.
func Decode(data []byte) (*State, []Problem) {
	root, p := anyTree(data)
	if p != nil {
		return nil, []Problem{*p}
	}
	return decodeTree(root)
}

// anyTree reads data as JSON if its first byte that is not white space
// is '{', as YAML otherwise.
func anyTree(data []byte) (*textValue, *Problem) {
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
		return jsonTree(data)
	}
	return yamlTree(data)
}

// DecodeJSON reads a State from JSON alone, with lines counted from the
// start of data.
func DecodeJSON(data []byte) (*State, []Problem) {
	root, p := jsonTree(data)
	if p != nil {
		return nil, []Problem{*p}
	}
	return decodeTree(root)
}

// DecodeYAMLNode reads a State from a node the yaml package has parsed,
// with the document's lines.
func DecodeYAMLNode(n *yaml.Node) (*State, []Problem) {
	root, p := yamlNodeTree(n, 0)
	if p != nil {
		return nil, []Problem{*p}
	}
	return decodeTree(root)
}

// EncodeYAML writes s in its YAML text form, indented by two spaces.
func EncodeYAML(s *State) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	err := enc.Encode(s)
	if err == nil {
		err = enc.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("proxier: writing a State as YAML: %w", err)
	}
	return b.Bytes(), nil
}
