package statefile

import "strings"

// Lines are the lines of a document's values by path, as the decoder
// names them (services["web"].ports[0].port): what places a problem that
// validation finds after decoding. A field's line is its key's, a list
// item's is where the item starts.
type Lines struct {
	m map[string]int
}

// Of returns the line of the value at path or, for a value the document
// leaves out (a default), of the nearest enclosing value it has; 0 if
// none.
func (l Lines) Of(path string) int {
	if n, ok := l.m[path]; ok {
		return n
	}
	ends := segmentEnds(path)
	for i := len(ends) - 1; i >= 0; i-- {
		if n, ok := l.m[path[:ends[i]]]; ok {
			return n
		}
	}
	return 0
}

// segmentEnds returns where each proper prefix of path that is itself a
// path ends: before each ".name" and each "[index]" or "[\"key\"]", with
// the quotes of a key (Go's %q, so \" and \\ inside) skipped over.
func segmentEnds(path string) []int {
	var ends []int
	for i := 0; i < len(path); i++ {
		switch path[i] {
		case '.':
			ends = append(ends, i)
		case '[':
			ends = append(ends, i)
			if i+1 < len(path) && path[i+1] == '"' {
				i = closingQuote(path, i+2)
			}
		}
	}
	return ends
}

// closingQuote returns the index of the quote that ends a quoted string
// whose text starts at i, or the end of s.
func closingQuote(s string, i int) int {
	for ; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(s)
}

// DecodeAt reads the State at key of a document in the text form's
// syntax (JSON if its first byte that is not white space is '{', YAML
// otherwise): key is the keys leading to the State's value, joined by
// dots ("state", "lb.state"), or "" for a document that is a State; the
// rest of the document is not read. Problems' paths start with key, and
// their lines are the document's.
//
// Unlike Decode, it returns what it could read beside the problems of
// form (the zero value in place of each value it could not read), so that
// validation can find the other problems in the same pass, and the Lines
// of what it read; the State is nil only when there is no tree to read
// (a problem of syntax, or nothing at key).
func DecodeAt(data []byte, key string) (*State, []Problem, Lines) {
	root, p := anyTree(data)
	if p == nil && key != "" {
		root, p = lookup(root, key)
	}
	if p != nil {
		return nil, []Problem{*p}, Lines{}
	}
	d := &stateDecoder{lines: map[string]int{}}
	s := d.state(key, root)
	return s, d.problems, Lines{m: d.lines}
}

// lookup returns the value at key (names joined by dots) under root.
func lookup(root *textValue, key string) (*textValue, *Problem) {
	v, path := root, ""
	for _, name := range strings.Split(key, ".") {
		where := path
		if where == "" {
			where = "document"
		}
		path = join(path, name)
		if v.kind != textObject {
			return nil, &Problem{Path: where, Msg: "is " + v.kind.String() + ", want an object with the key " + name, Line: v.line}
		}
		var found *textValue
		for i, k := range v.keys {
			if k.name == name {
				found = v.items[i]
				break
			}
		}
		if found == nil || found.kind == textNull {
			return nil, &Problem{Path: path, Msg: "is missing (the State is read from there)", Line: v.line}
		}
		v = found
	}
	return v, nil
}
