// Package conntracktest provides Fake, an in-memory conntrack table with
// conntrack.Client's Delete semantics, for unit tests of code that deletes
// stale flows.
//
// Code under test should depend on a small interface that both
// *conntrack.Client and *Fake satisfy:
//
//	type flowDeleter interface {
//		Delete(ctx context.Context, filters ...conntrack.Filter) (int, error)
//	}
package conntracktest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/ipvskit/ipvskit/conntrack"
)

// Fake is an in-memory conntrack table of one namespace. Delete validates
// and matches exactly as conntrack.Client does (same *ValidationError, same
// Filter.Matches) and counts the table dumps a Client would have made. The
// zero value is an empty table, ready to use; a Fake is safe for
// concurrent use.
type Fake struct {
	mu    sync.Mutex
	flows map[flowKey]conntrack.Flow // by original tuple, as the kernel keys them
	dumps int
	fail  error
}

// New returns an empty Fake.
func New() *Fake { return &Fake{} }

// Add inserts flows the way traffic (or conntrack -I) would. Each must have
// a protocol and four valid addresses of one family; a flow whose protocol
// and original tuple are already in the table is refused with an error
// matching fs.ErrExist, as the kernel refuses it, and then nothing is added.
func (f *Fake) Add(flows ...conntrack.Flow) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[flowKey]bool{}
	for i, fl := range flows {
		if err := check(fl); err != nil {
			return fmt.Errorf("conntracktest: flows[%d] %v: %w", i, fl, err)
		}
		k := key(fl)
		if _, ok := f.flows[k]; ok || seen[k] {
			return fmt.Errorf("conntracktest: flows[%d] %v: %w", i, fl, fs.ErrExist)
		}
		seen[k] = true
	}
	if f.flows == nil {
		f.flows = map[flowKey]conntrack.Flow{}
	}
	for _, fl := range flows {
		f.flows[key(fl)] = fl
	}
	return nil
}

// flowKey is how the kernel finds a flow: its protocol and original tuple.
type flowKey struct {
	proto conntrack.Protocol
	orig  conntrack.Tuple
}

func key(fl conntrack.Flow) flowKey { return flowKey{fl.Protocol, fl.Original} }

func check(fl conntrack.Flow) error {
	if fl.Protocol == 0 {
		return fmt.Errorf("no protocol")
	}
	as := []netip.Addr{fl.Original.Src.Addr(), fl.Original.Dst.Addr(), fl.Reply.Src.Addr(), fl.Reply.Dst.Addr()}
	for _, a := range as {
		if !a.IsValid() || a.Zone() != "" || a.Is4() != as[0].Is4() {
			return fmt.Errorf("addresses must be valid, without zones, and of one family")
		}
	}
	return nil
}

// Flows returns the table, sorted by their String.
func (f *Fake) Flows() []conntrack.Flow {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]conntrack.Flow, 0, len(f.flows))
	for _, fl := range f.flows {
		out = append(out, fl)
	}
	slices.SortFunc(out, func(a, b conntrack.Flow) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// Dump returns the table as conntrack -L prints it (without state, timeout
// and counters), one flow a line, sorted.
func (f *Fake) Dump() string {
	var b strings.Builder
	for _, fl := range f.Flows() {
		b.WriteString(fl.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Dumps returns how many table dumps the Deletes so far would have cost
// against the kernel (one per family a call's filters involve), so a test
// can assert that a call that should not touch the kernel did not.
func (f *Fake) Dumps() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dumps
}

// FailDeletes makes every later Delete with valid filters fail, deleting
// nothing, with a *conntrack.Error wrapping err, until it is called with
// nil. Its dump still counts.
func (f *Fake) FailDeletes(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

// Delete deletes the flows that match any of filters, as
// conntrack.Client.Delete does, and returns how many.
func (f *Fake) Delete(ctx context.Context, filters ...conntrack.Filter) (int, error) {
	for i := range filters {
		if err := filters[i].Validate(); err != nil {
			var ve *conntrack.ValidationError
			if errors.As(err, &ve) {
				ve.Field = fmt.Sprintf("filters[%d].%s", i, ve.Field)
			}
			return 0, err
		}
	}
	if len(filters) == 0 {
		return 0, nil
	}
	fams := families(filters)
	if err := ctx.Err(); err != nil {
		return 0, &conntrack.Error{Op: "dump", Family: fams[0], Err: err}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dumps += len(fams)
	if f.fail != nil {
		return 0, &conntrack.Error{Op: "dump", Family: fams[0], Err: f.fail}
	}
	n := 0
	for k, fl := range f.flows {
		for i := range filters {
			if filters[i].Matches(fl) {
				delete(f.flows, k)
				n++
				break
			}
		}
	}
	return n, nil
}

func families(filters []conntrack.Filter) []conntrack.Family {
	var v4, v6 bool
	for i := range filters {
		fam, ok := filters[i].Family()
		v4 = v4 || !ok || fam == conntrack.IPv4
		v6 = v6 || !ok || fam == conntrack.IPv6
	}
	var out []conntrack.Family
	if v4 {
		out = append(out, conntrack.IPv4)
	}
	if v6 {
		out = append(out, conntrack.IPv6)
	}
	return out
}
