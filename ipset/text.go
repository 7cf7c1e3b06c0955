package ipset

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ipvskit/ipvskit/inet"
)

// Text in the format of `ipset save` and `ipset restore`:
//
//	create NAME TYPE [family inet|inet6] [hashsize N] [maxelem N] [range A-B] [timeout N] [counters] [comment]
//	add NAME ELEMENT [timeout N] [packets N bytes N] [comment "TEXT"]

// WriteText writes sets and their entries as `ipset restore` input, which is
// also what `ipset save` prints for them. It validates everything first and
// writes nothing when something is invalid.
func WriteText(w io.Writer, sets []SetInfo) error {
	for i := range sets {
		if err := sets[i].Validate(); err != nil {
			return err
		}
		for j := range sets[i].Entries {
			if err := sets[i].Entries[j].validate(&sets[i].Set, fmt.Sprintf("sets[%d].Entries[%d]", i, j)); err != nil {
				return err
			}
		}
	}
	bw := bufio.NewWriter(w)
	for i := range sets {
		s := &sets[i]
		bw.WriteString(createLine(&s.Set))
		bw.WriteByte('\n')
		for j := range s.Entries {
			bw.WriteString(addLine(&s.Set, &s.Entries[j]))
			bw.WriteByte('\n')
		}
	}
	return bw.Flush()
}

// createLine renders a set as a create command.
func createLine(s *Set) string {
	var b strings.Builder
	b.WriteString("create ")
	b.WriteString(s.Name)
	b.WriteByte(' ')
	b.WriteString(s.Type.String())
	if s.Type.isHash() {
		b.WriteString(" family ")
		b.WriteString(FamilyName(s.family()))
		if s.HashSize != 0 {
			fmt.Fprintf(&b, " hashsize %d", s.HashSize)
		}
		if s.MaxElem != 0 {
			fmt.Fprintf(&b, " maxelem %d", s.MaxElem)
		}
	} else {
		from, to := s.portRange()
		fmt.Fprintf(&b, " range %d-%d", from, to)
	}
	if s.hasTimeouts() {
		fmt.Fprintf(&b, " timeout %d", int64(s.Timeout/time.Second))
	}
	if s.Counters {
		b.WriteString(" counters")
	}
	if s.Comment {
		b.WriteString(" comment")
	}
	return b.String()
}

// addLine renders an entry of s as an add command.
func addLine(s *Set, e *Entry) string {
	var b strings.Builder
	b.WriteString("add ")
	b.WriteString(s.Name)
	b.WriteByte(' ')
	b.WriteString(e.format(s.Type))
	if e.Timeout != 0 {
		fmt.Fprintf(&b, " timeout %d", int64(e.Timeout/time.Second))
	}
	if s.Counters {
		fmt.Fprintf(&b, " packets %d bytes %d", e.Packets, e.Bytes)
	}
	if e.Comment != "" {
		fmt.Fprintf(&b, " comment \"%s\"", e.Comment)
	}
	return b.String()
}

// ParseError is a line of ipset text that could not be parsed.
type ParseError struct {
	Line int    // 1-based
	Text string // the line
	Err  error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("ipset text line %d %q: %v", e.Line, e.Text, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// ParseText reads `ipset save` output (or `ipset restore` input made of
// create and add commands) and returns the sets with their entries, in order.
// Options the kernel adds on its own (bucketsize, initval) are ignored;
// options this package does not model (netmask, skbinfo, nomatch, ...) are an
// error, so that nothing is silently dropped.
func ParseText(r io.Reader) ([]SetInfo, error) {
	var (
		out   []SetInfo
		index = map[string]int{}
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		fail := func(err error) ([]SetInfo, error) {
			return nil, &ParseError{Line: line, Text: text, Err: err}
		}
		words, err := splitWords(text)
		if err != nil {
			return fail(err)
		}
		if len(words) == 0 || strings.HasPrefix(words[0], "#") {
			continue
		}
		switch words[0] {
		case "create", "-N", "-exist":
			if words[0] == "-exist" || len(words) < 3 {
				return fail(fmt.Errorf("create needs a name and a type"))
			}
			s, err := parseCreate(words[1], words[2], words[3:])
			if err != nil {
				return fail(err)
			}
			if _, dup := index[s.Name]; dup {
				return fail(fmt.Errorf("set %s created twice", s.Name))
			}
			index[s.Name] = len(out)
			out = append(out, SetInfo{Set: s})
		case "add", "-A":
			if len(words) < 3 {
				return fail(fmt.Errorf("add needs a set name and an element"))
			}
			i, ok := index[words[1]]
			if !ok {
				return fail(fmt.Errorf("add to set %s, which the text does not create", words[1]))
			}
			s := &out[i]
			e, err := parseAdd(&s.Set, words[2], words[3:])
			if err != nil {
				return fail(err)
			}
			s.Entries = append(s.Entries, e)
		default:
			return fail(fmt.Errorf("unknown command %q", words[0]))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("ipset text: %w", err)
	}
	return out, nil
}

func parseCreate(name, typ string, opts []string) (Set, error) {
	t, err := ParseType(typ)
	if err != nil {
		return Set{}, err
	}
	s := Set{Name: name, Type: t}
	r := optReader{opts: opts}
	for ; r.i < len(opts); r.i++ {
		if err := createOption(&s, &r); err != nil {
			return s, err
		}
	}
	if err := s.Validate(); err != nil {
		return s, err
	}
	return s, nil
}

// optReader walks the options of a create line; i is the option at hand.
type optReader struct {
	opts []string
	i    int
}

// arg consumes and returns the value of the option at hand.
func (r *optReader) arg() (string, error) {
	if r.i+1 >= len(r.opts) {
		return "", fmt.Errorf("option %s needs a value", r.opts[r.i])
	}
	r.i++
	return r.opts[r.i], nil
}

// num consumes the value of the option at hand as a number of bits bits.
func (r *optReader) num(bits int) (uint64, error) {
	o := r.opts[r.i]
	v, err := r.arg()
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(v, 0, bits)
	if err != nil {
		return 0, fmt.Errorf("option %s: %w", o, err)
	}
	return n, nil
}

// createOption applies the option at hand (and its value) to s.
func createOption(s *Set, r *optReader) error {
	switch o := r.opts[r.i]; o {
	case "family", "range":
		v, err := r.arg()
		if err != nil {
			return err
		}
		if o == "family" {
			return parseFamilyOption(s, v)
		}
		return parseRangeOption(s, v)
	case "hashsize", "maxelem", "timeout":
		n, err := r.num(32)
		if err != nil {
			return err
		}
		switch o {
		case "hashsize":
			s.HashSize = uint32(n)
		case "maxelem":
			s.MaxElem = uint32(n)
		default:
			s.Timeouts, s.Timeout = true, time.Duration(n)*time.Second
		}
	case "counters":
		s.Counters = true
	case "comment":
		s.Comment = true
	case "bucketsize", "initval":
		_, err := r.arg() // chosen by the kernel
		return err
	case "-exist":
	default:
		return fmt.Errorf("unsupported create option %q", o)
	}
	return nil
}

func parseFamilyOption(s *Set, v string) error {
	switch v {
	case "inet", "ipv4":
		s.Family = inet.IPv4
	case "inet6", "ipv6":
		s.Family = inet.IPv6
	default:
		return fmt.Errorf("unknown family %q", v)
	}
	return nil
}

func parseRangeOption(s *Set, v string) error {
	a, b, ok := strings.Cut(v, "-")
	from, err1 := strconv.ParseUint(a, 10, 16)
	to, err2 := strconv.ParseUint(b, 10, 16)
	if !ok || err1 != nil || err2 != nil {
		return fmt.Errorf("bad port range %q", v)
	}
	s.PortFrom, s.PortTo = uint16(from), uint16(to)
	return nil
}

func parseAdd(s *Set, elem string, opts []string) (Entry, error) {
	e, err := ParseEntry(s.Type, elem)
	if err != nil {
		return e, err
	}
	for i := 0; i < len(opts); i++ {
		o := opts[i]
		if o == "-exist" {
			continue
		}
		if i+1 >= len(opts) {
			return e, fmt.Errorf("unsupported or incomplete option %q", o)
		}
		i++
		v := opts[i]
		switch o {
		case "timeout", "packets", "bytes":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return e, fmt.Errorf("option %s: %w", o, err)
			}
			switch o {
			case "timeout":
				if n > uint64(MaxTimeout/time.Second) {
					return e, fmt.Errorf("timeout %d above the maximum", n)
				}
				e.Timeout = time.Duration(n) * time.Second
			case "packets":
				e.Packets = n
			case "bytes":
				e.Bytes = n
			}
		case "comment":
			e.Comment = v
		default:
			return e, fmt.Errorf("unsupported add option %q", o)
		}
	}
	if err := e.validate(s, "entry"); err != nil {
		return e, err
	}
	return e, nil
}

// splitWords splits a line at spaces and tabs; a double-quoted word (a
// comment) may contain spaces.
func splitWords(s string) ([]string, error) {
	var words []string
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return nil, fmt.Errorf("unterminated quote")
			}
			words = append(words, s[i+1:i+1+j])
			i += j + 2
		default:
			j := i
			for j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != '\r' {
				j++
			}
			words = append(words, s[i:j])
			i = j
		}
	}
	return words, nil
}

// Fields returns the line that could not be parsed, its path being "line
// N": a ParseError is an inet.InputError.
func (e *ParseError) Fields() []inet.FieldError {
	return []inet.FieldError{{Path: "line " + strconv.Itoa(e.Line), Value: e.Text, Reason: e.Err.Error()}}
}
