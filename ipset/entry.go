package ipset

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/ipvskit/ipvskit/inet"
)

// Entry is one element of a set, with its optional extensions. Which fields
// the element uses depends on the set's type:
//
//	hash:ip           IP
//	hash:ip,port      IP, Proto, Port
//	hash:ip,port,ip   IP, Proto, Port, IP2
//	hash:ip,port,net  IP, Proto, Port, Net2
//	hash:net          Net
//	hash:net,port     Net, Proto, Port
//	bitmap:port       Port
//
// The other element fields must be zero. Addresses are plain IPv4 or IPv6
// (no zone, no IPv4-mapped IPv6) of the set's family; networks must have
// no host bits set. Entry is comparable; Key strips the extensions, so that
// Key() values can be map keys for diffs.
type Entry struct {
	IP    netip.Addr
	Net   netip.Prefix
	Proto Protocol
	Port  uint16
	IP2   netip.Addr
	Net2  netip.Prefix

	// Timeout is the entry's timeout when added (zero: the set's
	// default) and what is left of it when listed. Needs Set.Timeouts.
	Timeout time.Duration
	// Comment needs Set.Comment; at most 255 bytes, printable, no '"'.
	Comment string
	// Packets and Bytes are the entry's counters. Needs Set.Counters.
	Packets, Bytes uint64
}

// Key returns the element alone, without timeout, comment and counters.
func (e Entry) Key() Entry {
	return Entry{IP: e.IP, Net: e.Net, Proto: e.Proto, Port: e.Port, IP2: e.IP2, Net2: e.Net2}
}

// typeOf guesses the type of set an entry belongs to from the fields it sets.
func (e *Entry) typeOf() Type {
	switch {
	case e.Net.IsValid() && e.Proto != 0:
		return HashNetPort
	case e.Net.IsValid():
		return HashNet
	case e.IP.IsValid() && e.IP2.IsValid():
		return HashIPPortIP
	case e.IP.IsValid() && e.Net2.IsValid():
		return HashIPPortNet
	case e.IP.IsValid() && e.Proto != 0:
		return HashIPPort
	case e.IP.IsValid():
		return HashIP
	}
	return BitmapPort
}

// String returns the element in ipset's notation, e.g. "198.18.0.1,tcp:80".
func (e Entry) String() string { return e.format(e.typeOf()) }

func (e *Entry) format(t Type) string {
	var b strings.Builder
	switch t {
	case HashIP:
		b.WriteString(e.IP.String())
	case HashIPPort, HashIPPortIP, HashIPPortNet:
		b.WriteString(e.IP.String())
		b.WriteByte(',')
		b.WriteString(protoPort(e.Proto, e.Port))
		switch t {
		case HashIPPortIP:
			b.WriteByte(',')
			b.WriteString(e.IP2.String())
		case HashIPPortNet:
			b.WriteByte(',')
			b.WriteString(e.Net2.String())
		}
	case HashNet:
		b.WriteString(e.Net.String())
	case HashNetPort:
		b.WriteString(e.Net.String())
		b.WriteByte(',')
		b.WriteString(protoPort(e.Proto, e.Port))
	case BitmapPort:
		b.WriteString(strconv.Itoa(int(e.Port)))
	}
	return b.String()
}

func protoPort(p Protocol, port uint16) string {
	return p.String() + ":" + strconv.Itoa(int(port))
}

// ValidateEntry checks e against the set s without talking to the kernel:
// that it has exactly the fields s's type needs, of s's family, and only the
// extensions s was created with. It returns a *ValidationError.
func (s *Set) ValidateEntry(e Entry) error { return e.validate(s, "entry") }

// validate checks e against the set it is meant for. field prefixes the
// field names in errors (e.g. "entries[3]").
func (e *Entry) validate(s *Set, field string) error {
	c := entryCheck{e: e, s: s, fam: s.family(), field: field}
	if err := c.first(); err != nil {
		return err
	}
	if err := c.protoPort(); err != nil {
		return err
	}
	if err := c.second(); err != nil {
		return err
	}
	return c.extensions()
}

// entryCheck is one validation of an entry: the entry, its set and the
// prefix of the field names in its errors.
type entryCheck struct {
	e     *Entry
	s     *Set
	fam   Family
	field string
}

func (c *entryCheck) bad(f, v, why string) error {
	return &ValidationError{Field: c.field + "." + f, Value: v, Reason: why}
}

func (c *entryCheck) addr(f string, a netip.Addr) error {
	switch {
	case !a.IsValid():
		return c.bad(f, "", "missing")
	case a.Zone() != "" || a.Is4In6():
		return c.bad(f, a.String(), "zones and IPv4-mapped IPv6 addresses are not allowed")
	case c.fam == inet.IPv4 && !a.Is4(), c.fam == inet.IPv6 && !a.Is6():
		return c.bad(f, a.String(), "not of the set's family "+FamilyName(c.fam))
	}
	return nil
}

func (c *entryCheck) prefix(f string, p netip.Prefix) error {
	if !p.IsValid() {
		return c.bad(f, "", "missing")
	}
	if err := c.addr(f, p.Addr()); err != nil {
		return err
	}
	if p.Bits() == 0 {
		return c.bad(f, p.String(), "prefix length 0 is not allowed")
	}
	if p.Masked() != p {
		return c.bad(f, p.String(), "host bits set")
	}
	return nil
}

// none fails if a field the set's type has no use for is set.
func (c *entryCheck) none(f string, set bool, v string) error {
	if set {
		return c.bad(f, v, "not part of a "+c.s.Type.String()+" element")
	}
	return nil
}

// first checks the element's first part: an address, a network, or
// neither (bitmap:port).
func (c *entryCheck) first() error {
	e, t := c.e, c.s.Type
	if t.firstIsNet() {
		if err := c.none("IP", e.IP.IsValid(), e.IP.String()); err != nil {
			return err
		}
		return c.prefix("Net", e.Net)
	}
	if err := c.none("Net", e.Net.IsValid(), e.Net.String()); err != nil {
		return err
	}
	if t == BitmapPort {
		return c.none("IP", e.IP.IsValid(), e.IP.String())
	}
	return c.addr("IP", e.IP)
}

// protoPort checks the protocol and port.
func (c *entryCheck) protoPort() error {
	e, t := c.e, c.s.Type
	if t.hasProto() {
		if !validProto(e.Proto) {
			return c.bad("Proto", e.Proto.String(), "must be tcp, udp, sctp or udplite")
		}
	} else if err := c.none("Proto", e.Proto != 0, e.Proto.String()); err != nil {
		return err
	}
	if t == BitmapPort {
		if from, to := c.s.portRange(); e.Port < from || e.Port > to {
			return c.bad("Port", strconv.Itoa(int(e.Port)), fmt.Sprintf("outside the set's range %d-%d", from, to))
		}
		return nil
	}
	return c.none("Port", !t.hasPort() && e.Port != 0, strconv.Itoa(int(e.Port)))
}

// second checks the element's last part: a second address or network.
func (c *entryCheck) second() error {
	e, t := c.e, c.s.Type
	if t == HashIPPortIP {
		if err := c.addr("IP2", e.IP2); err != nil {
			return err
		}
	} else if err := c.none("IP2", e.IP2.IsValid(), e.IP2.String()); err != nil {
		return err
	}
	if t == HashIPPortNet {
		return c.prefix("Net2", e.Net2)
	}
	return c.none("Net2", e.Net2.IsValid(), e.Net2.String())
}

// extensions checks the timeout, comment and counters against the
// extensions the set was created with.
func (c *entryCheck) extensions() error {
	e, s := c.e, c.s
	if e.Timeout != 0 {
		if !s.hasTimeouts() {
			return c.bad("Timeout", e.Timeout.String(), "the set has no timeout extension")
		}
		if err := validateTimeout(c.field+".Timeout", e.Timeout); err != nil {
			return err
		}
	}
	if e.Comment != "" {
		if !s.Comment {
			return c.bad("Comment", e.Comment, "the set has no comment extension")
		}
		if err := validateComment(c.field+".Comment", e.Comment); err != nil {
			return err
		}
	}
	if (e.Packets != 0 || e.Bytes != 0) && !s.Counters {
		return c.bad("Packets", fmt.Sprint(e.Packets, "/", e.Bytes), "the set has no counters extension")
	}
	return nil
}

func validateComment(field, c string) error {
	if len(c) > maxCommentLen {
		return &ValidationError{Field: field, Value: c, Reason: fmt.Sprintf("longer than %d bytes", maxCommentLen)}
	}
	for i := 0; i < len(c); i++ {
		if ch := c[i]; ch < ' ' || ch > '~' || ch == '"' {
			return &ValidationError{Field: field, Value: c, Reason: fmt.Sprintf("byte %q is not printable ASCII other than '\"'", ch)}
		}
	}
	return nil
}

// ParseEntry parses an element of a set of type t in ipset's notation
// ("198.18.0.1,tcp:80", "2001:db8::/64", "8080"), without extensions. For
// networks a bare address means a full-length prefix, as ipset writes it.
// Protocol-less ports in *,port types are tcp, as ipset reads them.
func ParseEntry(t Type, s string) (Entry, error) {
	var e Entry
	bad := func(f, why string) (Entry, error) {
		return Entry{}, &ValidationError{Field: f, Value: s, Reason: why}
	}
	parts := strings.Split(s, ",")
	want := map[Type]int{HashIP: 1, HashIPPort: 2, HashIPPortIP: 3, HashIPPortNet: 3, HashNet: 1, HashNetPort: 2, BitmapPort: 1}[t]
	if want == 0 {
		return bad("Type", "unsupported set type "+t.String())
	}
	if len(parts) != want {
		return bad("Entry", fmt.Sprintf("a %s element has %d comma-separated parts", t, want))
	}
	var err error
	switch {
	case t == BitmapPort:
		p := parts[0]
		if i := strings.IndexByte(p, ':'); i >= 0 {
			p = p[i+1:] // ipset accepts and drops a protocol here
		}
		port, perr := strconv.ParseUint(p, 10, 16)
		if perr != nil {
			return bad("Port", "not a port number")
		}
		e.Port = uint16(port)
		return e, nil
	case t.firstIsNet():
		if e.Net, err = parseNet(parts[0]); err != nil {
			return bad("Net", err.Error())
		}
	default:
		if e.IP, err = netip.ParseAddr(parts[0]); err != nil {
			return bad("IP", err.Error())
		}
	}
	if t.hasProto() {
		pp := parts[1]
		proto, port := "tcp", pp
		if i := strings.IndexByte(pp, ':'); i >= 0 {
			proto, port = pp[:i], pp[i+1:]
		}
		var ok bool
		if e.Proto, ok = parseProtocol(proto); !ok {
			return bad("Proto", "unknown protocol "+strconv.Quote(proto))
		}
		n, perr := strconv.ParseUint(port, 10, 16)
		if perr != nil {
			return bad("Port", "not a port number")
		}
		e.Port = uint16(n)
	}
	switch t {
	case HashIPPortIP:
		if e.IP2, err = netip.ParseAddr(parts[2]); err != nil {
			return bad("IP2", err.Error())
		}
	case HashIPPortNet:
		if e.Net2, err = parseNet(parts[2]); err != nil {
			return bad("Net2", err.Error())
		}
	}
	return e, nil
}

func parseNet(s string) (netip.Prefix, error) {
	if strings.IndexByte(s, '/') < 0 {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.ParsePrefix(s)
}
