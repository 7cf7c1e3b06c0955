package lbd

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ipvskit/ipvskit/proxier"
)

// reader walks a YAML tree, collecting every problem with its path and
// line, and the line of every value it reads; each method returns what it
// could read (the zero value where it could not).
type reader struct {
	problems []proxier.Problem
	lines    map[string]int
}

func (r *reader) add(path string, n *yaml.Node, format string, args ...any) {
	p := proxier.Problem{Path: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line = n.Line
		if n.Kind == yaml.ScalarNode {
			p.Value = n.Value
		}
	}
	r.problems = append(r.problems, p)
}

// fields checks that n is a mapping of the named fields, each once, and
// returns them by name; a null field is left out.
func (r *reader) fields(path string, n *yaml.Node, names ...string) map[string]*yaml.Node {
	r.seen(path, n)
	if n.Kind != yaml.MappingNode {
		r.add(path, n, "is not an object")
		return nil
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := join(path, k.Value)
		switch {
		case !slices.Contains(names, k.Value):
			r.add(p, k, "is not a field here (want one of %s)", strings.Join(names, ", "))
		case out[k.Value] != nil:
			r.add(p, k, "is given twice")
		case v.Tag != "!!null":
			out[k.Value] = v
		}
	}
	return out
}

// entries returns a mapping's keys and values in order.
func (r *reader) entries(path string, n *yaml.Node) (keys []string, vals []*yaml.Node) {
	r.seen(path, n)
	if n.Kind != yaml.MappingNode {
		r.add(path, n, "is not an object")
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		keys = append(keys, n.Content[i].Value)
		vals = append(vals, n.Content[i+1])
	}
	return keys, vals
}

func (r *reader) list(path string, n *yaml.Node) []*yaml.Node {
	r.seen(path, n)
	if n.Kind != yaml.SequenceNode {
		r.add(path, n, "is not a list")
		return nil
	}
	return n.Content
}

func (r *reader) seen(path string, n *yaml.Node) {
	if n != nil && n.Line > 0 {
		r.lines[path] = n.Line
	}
}

func (r *reader) scalar(path string, n *yaml.Node, want string) (string, bool) {
	if n == nil {
		return "", false
	}
	r.seen(path, n)
	if n.Kind != yaml.ScalarNode {
		r.add(path, n, "is not %s", want)
		return "", false
	}
	return n.Value, true
}

func (r *reader) str(path string, n *yaml.Node) string {
	s, _ := r.scalar(path, n, "a string")
	return s
}

// integer reads an integer of min-max.
func (r *reader) integer(path string, n *yaml.Node, lo, hi int64) int64 {
	s, ok := r.scalar(path, n, "a number")
	if !ok {
		return 0
	}
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil || v < lo || v > hi {
		r.add(path, n, "is not a whole number of %d-%d", lo, hi)
		return 0
	}
	return v
}

func (r *reader) num(path string, n *yaml.Node, hi int) int {
	return int(r.integer(path, n, 0, int64(hi)))
}

func (r *reader) boolean(path string, n *yaml.Node) bool {
	s, ok := r.scalar(path, n, "true or false")
	if !ok {
		return false
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		r.add(path, n, "is not true or false")
	}
	return v
}

// duration reads a Go duration ("2s", "500ms") or a number of seconds.
func (r *reader) duration(path string, n *yaml.Node) time.Duration {
	s, ok := r.scalar(path, n, "a duration")
	if !ok {
		return 0
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 && f < math.MaxInt64/float64(time.Second) {
		return time.Duration(f * float64(time.Second))
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		r.add(path, n, "is not a duration (\"2s\", \"500ms\") or a number of seconds")
		return 0
	}
	return d
}

func (r *reader) addr(path string, n *yaml.Node) netip.Addr {
	s, ok := r.scalar(path, n, "an IP address")
	if !ok {
		return netip.Addr{}
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		r.add(path, n, "is not an IP address")
		return netip.Addr{}
	}
	return a.Unmap()
}

// word reads one of words in any case, given as the word; absent is def.
func (r *reader) word(path string, n *yaml.Node, def string, words ...string) string {
	s, ok := r.scalar(path, n, "a word")
	if !ok {
		return def
	}
	for _, w := range words {
		if strings.EqualFold(s, w) {
			return w
		}
	}
	r.add(path, n, "is not one of %s", strings.Join(words, ", "))
	return def
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func key(path, k string) string { return fmt.Sprintf("%s[%q]", path, k) }
