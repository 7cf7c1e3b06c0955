// Package ipsettest provides Fake, an in-memory stand-in for an ipset.Client
// with the kernel's semantics, for unit tests of code that uses ipsets.
//
// Example:
//
//	f := ipsettest.New()
//	err := f.Replace(ctx, ipset.Set{Name: "KUBE-CLUSTER-IP", Type: ipset.HashIPPort},
//		[]ipset.Entry{{IP: netip.MustParseAddr("198.18.0.10"), Proto: ipset.UDP, Port: 53}})
//	fmt.Print(f.Dump())
//	// create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536
//	// add KUBE-CLUSTER-IP 198.18.0.10,udp:53
package ipsettest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"syscall"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/ipset"
)

// Fake keeps sets in memory and answers like the kernel: the same validation
// errors, the same *ipset.Error classes (ErrSetFull, ErrTypeMismatch,
// ErrInUse, fs.ErrExist, fs.ErrNotExist, ...), all-or-nothing Replace. It has
// the method set of *ipset.Client, so code written against a small interface
// takes either. A call with a done context returns its error and changes
// nothing. Entries never expire: timeouts are stored, not counted down.
// The zero value is not usable; call New. A Fake is safe for concurrent use.
type Fake struct {
	mu   sync.Mutex
	sets []*fakeSet // in creation order, as the kernel lists them
}

type fakeSet struct {
	set     ipset.Set
	refs    uint32
	entries []ipset.Entry // in insertion order
	index   map[ipset.Entry]int
}

// New returns an empty Fake.
func New() *Fake { return &Fake{} }

func (f *Fake) find(name string) (int, *fakeSet) {
	for i, s := range f.sets {
		if s.set.Name == name {
			return i, s
		}
	}
	return -1, nil
}

func kerr(op, set string, err error) error { return &ipset.Error{Op: op, Set: set, Err: err} }

func errno(op, set string, e syscall.Errno) error {
	return &ipset.Error{Op: op, Set: set, Code: int(e), Err: e}
}

func (f *Fake) get(op, name string) (*fakeSet, error) {
	if _, s := f.find(name); s != nil {
		return s, nil
	}
	return nil, errno(op, name, syscall.ENOENT)
}

// normal returns s as the kernel would report it (defaults filled in).
func normal(s ipset.Set) ipset.Set {
	if s.Type == ipset.BitmapPort {
		if s.PortFrom == 0 && s.PortTo == 0 {
			s.PortTo = 65535
		}
		return s
	}
	if s.Family == ipset.FamilyUnspec {
		s.Family = inet.IPv4
	}
	if s.HashSize == 0 {
		s.HashSize = ipset.DefaultHashSize
	}
	if s.MaxElem == 0 {
		s.MaxElem = ipset.DefaultMaxElem
	}
	if s.Timeout != 0 {
		s.Timeouts = true
	}
	return s
}

func capacity(s *ipset.Set) int {
	if s.Type == ipset.BitmapPort {
		return int(s.PortTo) - int(s.PortFrom) + 1
	}
	return int(s.MaxElem)
}

// Create creates a set, like ipset.Client.Create.
func (f *Fake) Create(ctx context.Context, s ipset.Set) error { return f.create(ctx, s, false) }

// Ensure creates a set unless the same one exists, like ipset.Client.Ensure.
func (f *Fake) Ensure(ctx context.Context, s ipset.Set) error { return f.create(ctx, s, true) }

func (f *Fake) create(ctx context.Context, s ipset.Set, exist bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s = normal(s)
	if _, old := f.find(s.Name); old != nil {
		if exist && old.set == s {
			return nil
		}
		return errno("create", s.Name, syscall.EEXIST)
	}
	f.sets = append(f.sets, &fakeSet{set: s, index: map[ipset.Entry]int{}})
	return nil
}

// Destroy destroys a set; it fails with ipset.ErrInUse while referenced.
func (f *Fake) Destroy(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	i, s := f.find(name)
	if s == nil {
		return errno("destroy", name, syscall.ENOENT)
	}
	if s.refs > 0 {
		return kerr("destroy", name, ipset.ErrInUse)
	}
	f.sets = slices.Delete(f.sets, i, i+1)
	return nil
}

// Flush empties a set.
func (f *Fake) Flush(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.get("flush", name)
	if err != nil {
		return err
	}
	s.entries, s.index = nil, map[ipset.Entry]int{}
	return nil
}

// Rename renames a set; the new name must be free and the set unreferenced.
func (f *Fake) Rename(ctx context.Context, from, to string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.get("rename", from)
	if err != nil {
		return err
	}
	if _, t := f.find(to); t != nil {
		return kerr("rename", from, ipset.ErrSetExists)
	}
	if s.refs > 0 {
		return kerr("rename", from, ipset.ErrInUse)
	}
	s.set.Name = to
	return nil
}

// Swap exchanges the contents and options of two sets of the same type and
// family; names and references stay where they are, as in the kernel.
func (f *Fake) Swap(ctx context.Context, a, b string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	sa, err := f.get("swap", a)
	if err != nil {
		return err
	}
	sb, err := f.get("swap", b)
	if err != nil {
		return err
	}
	if sa.set.Type != sb.set.Type || sa.set.Family != sb.set.Family {
		return kerr("swap", a, ipset.ErrTypeMismatch)
	}
	na, nb := sa.set.Name, sb.set.Name
	sa.set, sb.set = sb.set, sa.set
	sa.set.Name, sb.set.Name = na, nb
	sa.entries, sb.entries = sb.entries, sa.entries
	sa.index, sb.index = sb.index, sa.index
	return nil
}

func (s *fakeSet) info(withEntries bool) ipset.SetInfo {
	in := ipset.SetInfo{Set: s.set, Elements: uint32(len(s.entries)), References: s.refs}
	if withEntries {
		in.Entries = slices.Clone(s.entries)
		if in.Entries == nil {
			in.Entries = []ipset.Entry{}
		}
	}
	return in
}

// Header returns a set's options and state.
func (f *Fake) Header(ctx context.Context, name string) (ipset.SetInfo, error) {
	if err := ctx.Err(); err != nil {
		return ipset.SetInfo{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.get("list", name)
	if err != nil {
		return ipset.SetInfo{}, err
	}
	return s.info(false), nil
}

// List returns a set with its entries.
func (f *Fake) List(ctx context.Context, name string) (ipset.SetInfo, error) {
	if err := ctx.Err(); err != nil {
		return ipset.SetInfo{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.get("list", name)
	if err != nil {
		return ipset.SetInfo{}, err
	}
	return s.info(true), nil
}

// ListAll returns every set, with entries unless headersOnly.
func (f *Fake) ListAll(ctx context.Context, headersOnly bool) ([]ipset.SetInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]ipset.SetInfo, 0, len(f.sets))
	for _, s := range f.sets {
		out = append(out, s.info(!headersOnly))
	}
	return out, nil
}

// Add adds entries; present ones are updated, as with `ipset -exist add`.
func (f *Fake) Add(ctx context.Context, name string, entries ...ipset.Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.adt("add", name, entries, false)
}

// AddStrict adds entries; present ones are ipset.ErrElementExists errors.
func (f *Fake) AddStrict(ctx context.Context, name string, entries ...ipset.Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.adt("add", name, entries, true)
}

// Del removes entries; absent ones are ignored.
func (f *Fake) Del(ctx context.Context, name string, entries ...ipset.Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.adt("del", name, entries, false)
}

// DelStrict removes entries; absent ones are ipset.ErrElementMissing errors.
func (f *Fake) DelStrict(ctx context.Context, name string, entries ...ipset.Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.adt("del", name, entries, true)
}

// Update applies every change's additions, then its deletions, as
// ipset.Client.Update does. Every set must exist and every entry fit its
// set before anything changes; the first problem is returned alone.
func (f *Fake) Update(ctx context.Context, changes ...ipset.Change) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	for ci, ch := range changes {
		s, err := f.get("update", ch.Set.Name)
		if err != nil {
			f.mu.Unlock()
			return err
		}
		for side, es := range [][]ipset.Entry{ch.Add, ch.Del} {
			for i, e := range es {
				if err := s.set.ValidateEntry(e); err != nil {
					var ve *ipset.ValidationError
					if errors.As(err, &ve) {
						ve.Field = fmt.Sprintf("changes[%d].%s[%d]%s", ci, [2]string{"add", "del"}[side], i, ve.Field[len("entry"):])
					}
					f.mu.Unlock()
					return err
				}
			}
		}
	}
	f.mu.Unlock()
	var errs []error
	for _, ch := range changes {
		errs = append(errs, f.adt("add", ch.Set.Name, ch.Add, false))
	}
	for _, ch := range changes {
		errs = append(errs, f.adt("del", ch.Set.Name, ch.Del, false))
	}
	return errors.Join(errs...)
}

func (f *Fake) adt(op, name string, entries []ipset.Entry, strict bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.get("list", name)
	if err != nil {
		return err
	}
	for i, e := range entries {
		if err := s.set.ValidateEntry(e); err != nil {
			var ve *ipset.ValidationError
			if errors.As(err, &ve) {
				ve.Field = fmt.Sprintf("entries[%d]%s", i, ve.Field[len("entry"):])
			}
			return err
		}
	}
	var errs []error
	fail := func(e ipset.Entry, cause error) {
		errs = append(errs, &ipset.Error{Op: op, Set: name, Entry: e.Key().String(), Err: cause})
	}
	for _, e := range entries {
		k := e.Key()
		i, present := s.index[k]
		switch {
		case op == "add" && present && strict:
			fail(e, ipset.ErrElementExists)
		case op == "add" && present:
			s.entries[i] = e
		case op == "add" && len(s.entries) >= capacity(&s.set):
			fail(e, ipset.ErrSetFull)
		case op == "add":
			s.index[k] = len(s.entries)
			s.entries = append(s.entries, e)
		case !present && strict:
			fail(e, ipset.ErrElementMissing)
		case present:
			s.remove(i)
		}
	}
	return errors.Join(errs...)
}

func (s *fakeSet) remove(i int) {
	delete(s.index, s.entries[i].Key())
	s.entries = slices.Delete(s.entries, i, i+1)
	for j := i; j < len(s.entries); j++ {
		s.index[s.entries[j].Key()] = j
	}
}

// Test reports whether e is in the set; for hash:net types a full-length
// prefix matches the networks containing it, a shorter one only itself.
func (f *Fake) Test(ctx context.Context, name string, e ipset.Entry) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.get("test", name)
	if err != nil {
		return false, err
	}
	k := e.Key()
	if err := s.set.ValidateEntry(k); err != nil {
		return false, err
	}
	if _, ok := s.index[k]; ok {
		return true, nil
	}
	if k.Net.IsValid() && k.Net.Bits() == k.Net.Addr().BitLen() {
		for _, m := range s.entries {
			if m.Net.Bits() <= k.Net.Bits() && m.Net.Contains(k.Net.Addr()) && m.Proto == k.Proto && m.Port == k.Port {
				return true, nil
			}
		}
	}
	return false, nil
}

// Replace makes set s hold exactly entries, all or nothing, with the same
// checks as ipset.Client.Replace.
func (f *Fake) Replace(ctx context.Context, s ipset.Set, entries []ipset.Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return err
	}
	n := normal(s)
	ns := &fakeSet{set: n, index: map[ipset.Entry]int{}}
	for i, e := range entries {
		if err := s.ValidateEntry(e); err != nil {
			var ve *ipset.ValidationError
			if errors.As(err, &ve) {
				ve.Field = fmt.Sprintf("entries[%d]%s", i, ve.Field[len("entry"):])
			}
			return err
		}
		if _, dup := ns.index[e.Key()]; dup {
			continue
		}
		ns.index[e.Key()] = len(ns.entries)
		ns.entries = append(ns.entries, e)
	}
	if len(ns.entries) > capacity(&n) {
		return &ipset.ValidationError{Field: "entries", Value: fmt.Sprint(len(ns.entries), " entries"),
			Reason: fmt.Sprintf("more than the set's maxelem %d", capacity(&n))}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, old := f.find(s.Name)
	if old == nil {
		f.sets = append(f.sets, ns)
		return nil
	}
	if old.set.Type != n.Type || old.set.Family != n.Family {
		return kerr("replace", s.Name, ipset.ErrTypeMismatch)
	}
	old.set, old.entries, old.index = n, ns.entries, ns.index
	return nil
}

// Reference and Unreference count a rule that references the set, as an
// iptables `-m set` rule does in the kernel: while referenced, Destroy and
// Rename fail with ipset.ErrInUse.
func (f *Fake) Reference(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.get("reference", name)
	if err != nil {
		return err
	}
	s.refs++
	return nil
}

// Unreference drops a reference taken with Reference.
func (f *Fake) Unreference(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.get("unreference", name)
	if err != nil {
		return err
	}
	if s.refs == 0 {
		return kerr("unreference", name, fs.ErrInvalid)
	}
	s.refs--
	return nil
}

// Dump returns every set and entry in `ipset save` format, in creation order.
func (f *Fake) Dump() string {
	sets, _ := f.ListAll(context.Background(), false)
	var b bytes.Buffer
	if err := ipset.WriteText(&b, sets); err != nil {
		return "# " + err.Error() + "\n"
	}
	return b.String()
}
