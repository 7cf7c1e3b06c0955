package statefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// textValue is one value of a State's text form, read from JSON or YAML
// before it means anything: the decoder walks this tree, so both syntaxes
// have one set of rules and one set of messages.
type textValue struct {
	kind  textKind
	text  string       // a string; a number as written; "true" or "false"; the tag of a textOther
	line  int          // where the value starts, from 1; 0 if not known
	keys  []textKey    // an object's keys, in order, duplicates kept
	items []*textValue // a list's items, or an object's values (keys[i]'s is items[i])
}

type textKey struct {
	name string
	line int
}

type textKind uint8

const (
	textNull textKind = iota
	textBool
	textNumber
	textString
	textList
	textObject
	textOther // a YAML scalar of a tag the form does not use (!!binary, !custom)
)

func (k textKind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "a list", "an object", "a tagged value"}[k]
}

// shown is v as a Problem's Value: a string quoted, a number or boolean as
// written, nothing for the rest.
func (v *textValue) shown() string {
	switch v.kind {
	case textString:
		return strconv.Quote(v.text)
	case textNumber, textBool:
		return v.text
	case textOther:
		return v.text
	}
	return ""
}

// maxTextDepth bounds nesting: a State is six levels deep, and a deeper
// document is refused before it can exhaust the stack.
const maxTextDepth = 32

// syntaxProblem is a problem of syntax: where the parser stopped, and why.
func syntaxProblem(line int, format string, args ...any) *Problem {
	path := "document"
	if line > 0 {
		path = "line " + strconv.Itoa(line)
	}
	return &Problem{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// jsonTree reads one JSON value, with nothing but white space after it.
func jsonTree(data []byte) (*textValue, *Problem) {
	r := &jsonReader{dec: json.NewDecoder(bytes.NewReader(data)), data: data, line: 1}
	r.dec.UseNumber()
	v, p := r.value(0)
	if p != nil {
		return nil, p
	}
	if _, err := r.dec.Token(); err != io.EOF {
		return nil, syntaxProblem(r.lineAt(r.dec.InputOffset()), "invalid JSON: data after the top-level value")
	}
	return v, nil
}

type jsonReader struct {
	dec  *json.Decoder
	data []byte
	off  int64 // lineAt counted newlines up to here
	line int
}

// lineAt returns the line of byte off; offsets only grow.
func (r *jsonReader) lineAt(off int64) int {
	if off > int64(len(r.data)) {
		off = int64(len(r.data))
	}
	if off > r.off {
		r.line += bytes.Count(r.data[r.off:off], []byte{'\n'})
		r.off = off
	}
	return r.line
}

func (r *jsonReader) token() (json.Token, int, *Problem) {
	tok, err := r.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, 0, syntaxProblem(r.lineAt(se.Offset), "invalid JSON: %v", se)
		case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
			return nil, 0, syntaxProblem(r.lineAt(int64(len(r.data))), "invalid JSON: unexpected end of input")
		}
		return nil, 0, syntaxProblem(r.lineAt(r.dec.InputOffset()), "invalid JSON: %v", err)
	}
	// The token ends at the offset; no token spans a line.
	return tok, r.lineAt(r.dec.InputOffset()), nil
}

func (r *jsonReader) value(depth int) (*textValue, *Problem) {
	tok, line, p := r.token()
	if p != nil {
		return nil, p
	}
	v := &textValue{line: line}
	switch t := tok.(type) {
	case nil:
		v.kind = textNull
	case bool:
		v.kind, v.text = textBool, strconv.FormatBool(t)
	case json.Number:
		v.kind, v.text = textNumber, string(t)
	case string:
		v.kind, v.text = textString, t
	case json.Delim:
		if depth >= maxTextDepth {
			return nil, syntaxProblem(line, "nested more than %d levels deep", maxTextDepth)
		}
		if t == '[' {
			v.kind = textList
		} else {
			v.kind = textObject
		}
		for r.dec.More() {
			if v.kind == textObject {
				tok, kline, p := r.token()
				if p != nil {
					return nil, p
				}
				v.keys = append(v.keys, textKey{name: tok.(string), line: kline}) // More and Token allow only a string here
			}
			item, p := r.value(depth + 1)
			if p != nil {
				return nil, p
			}
			v.items = append(v.items, item)
		}
		if _, _, p := r.token(); p != nil { // the closing ] or }
			return nil, p
		}
	}
	return v, nil
}

// yamlTree reads the one YAML document in data.
func yamlTree(data []byte) (*textValue, *Problem) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, syntaxProblem(0, "is empty (a State with no services is written {})")
		}
		return nil, yamlSyntaxProblem(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, syntaxProblem(next.Line, "a second YAML document (a State is one document)")
	case err != io.EOF:
		return nil, yamlSyntaxProblem(err)
	}
	return yamlNodeTree(&doc, len(data))
}

// yamlSyntaxProblem turns the parser's "yaml: line 3: did not find
// expected key" into a problem at line 3.
func yamlSyntaxProblem(err error) *Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if l, err := strconv.Atoi(n); err == nil {
				line, msg = l, after
			}
		}
	}
	return syntaxProblem(line, "invalid YAML: %s", msg)
}

// yamlNodeTree converts a YAML node. Aliases are followed, within a
// budget of values (size bytes of input make at most 4*size+1024), so a
// document of aliases of aliases cannot grow without bound; size 0 means
// the node was decoded elsewhere, and the budget is fixed.
func yamlNodeTree(n *yaml.Node, size int) (*textValue, *Problem) {
	c := &yamlConverter{budget: 4*size + 1024}
	if size == 0 {
		c.budget = 1 << 20
	}
	return c.value(n, 0)
}

type yamlConverter struct {
	budget int
}

func (c *yamlConverter) value(n *yaml.Node, depth int) (*textValue, *Problem) {
	if c.budget--; c.budget < 0 {
		return nil, syntaxProblem(n.Line, "too many values (YAML aliases expand to more than the document can hold)")
	}
	if depth >= maxTextDepth {
		return nil, syntaxProblem(n.Line, "nested more than %d levels deep", maxTextDepth)
	}
	v := &textValue{line: n.Line}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, syntaxProblem(0, "is empty (a State with no services is written {})")
		}
		return c.value(n.Content[0], depth)
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, syntaxProblem(n.Line, "invalid YAML: alias %q has no anchor", n.Value)
		}
		return c.value(n.Alias, depth+1)
	case yaml.SequenceNode:
		v.kind = textList
		for _, item := range n.Content {
			iv, p := c.value(item, depth+1)
			if p != nil {
				return nil, p
			}
			v.items = append(v.items, iv)
		}
	case yaml.MappingNode:
		v.kind = textObject
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			for k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				return nil, syntaxProblem(k.Line, "a key that is a list or an object")
			}
			iv, p := c.value(n.Content[i+1], depth+1)
			if p != nil {
				return nil, p
			}
			v.keys = append(v.keys, textKey{name: k.Value, line: k.Line})
			v.items = append(v.items, iv)
		}
	case yaml.ScalarNode:
		c.scalar(n, v)
	default:
		return nil, syntaxProblem(n.Line, "invalid YAML: a node of kind %d", n.Kind)
	}
	return v, nil
}

// scalar reads a scalar by its resolved tag: YAML's own syntax for
// numbers (0x1f, 1_000) and booleans is read by the yaml package.
func (c *yamlConverter) scalar(n *yaml.Node, v *textValue) {
	switch tag := n.ShortTag(); tag {
	case "!!null":
		v.kind = textNull
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			v.kind, v.text = textBool, strconv.FormatBool(b)
		} else {
			v.kind, v.text = textOther, tag
		}
	case "!!int":
		var i int64
		v.kind, v.text = textNumber, n.Value
		if n.Decode(&i) == nil {
			v.text = strconv.FormatInt(i, 10)
		}
	case "!!float":
		v.kind, v.text = textNumber, n.Value
	case "!!str", "!!timestamp":
		v.kind, v.text = textString, n.Value
	default:
		v.kind, v.text = textOther, tag
	}
}
