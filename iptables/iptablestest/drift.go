package iptablestest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ipvskit/ipvskit/iptables"
)

// errNothingHeld is returned by DropMember and AddMember before an Apply.
var errNothingHeld = errors.New("iptablestest: the Fake holds no sets to change")

// Check reports how the sets the Fake holds differ from what it last
// applied (one ObjectDrift per set, named as the nftables back end names it,
// with counts), followed by the drift given to SetDrift, changing nothing.
// Before the first Apply and after Cleanup it reports nothing.
func (f *Fake) Check(ctx context.Context) ([]iptables.ObjectDrift, error) {
	if err := f.lockOwned(ctx); err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	if f.want == nil {
		return nil, nil
	}
	var out []iptables.ObjectDrift
	if f.held == nil {
		out = append(out, iptables.ObjectDrift{Object: "table " + f.table(), Problem: "missing"})
	} else {
		for _, s := range iptables.Sets() {
			missing, extra := diff(f.held.Members(s), f.want.Members(s))
			if len(missing)+len(extra) > 0 {
				out = append(out, iptables.ObjectDrift{Object: "set " + f.table() + " " + s.String(),
					Problem: problem(missing, extra), Missing: len(missing), Extra: len(extra)})
			}
		}
	}
	return append(out, f.drift...), nil
}

// SetDrift makes Check report d, after any drift of the sets, until the
// next Repair or Cleanup.
func (f *Fake) SetDrift(d ...iptables.ObjectDrift) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drift = slices.Clone(d)
}

// DropMember deletes m from set s of what the Fake holds, as another
// program deleting a set element would: Check reports it until Repair or an
// Apply that adds it again. It changes nothing the Fake applied.
func (f *Fake) DropMember(s iptables.SetName, m iptables.Member) error {
	return f.edit(func(r *iptables.Ruleset) { r.Remove(s, m) })
}

// AddMember adds m to set s of what the Fake holds, as another program
// would; it is not validated.
func (f *Fake) AddMember(s iptables.SetName, m iptables.Member) error {
	return f.edit(func(r *iptables.Ruleset) { r.Add(s, m) })
}

func (f *Fake) edit(change func(*iptables.Ruleset)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held == nil {
		return errNothingHeld
	}
	change(f.held)
	return nil
}

// table is the nftables back end's table, e.g. "ip ipvskit".
func (f *Fake) table() string {
	if f.fam == iptables.IPv6 {
		return "ip6 " + iptables.DefaultTable
	}
	return "ip " + iptables.DefaultTable
}

// diff returns the members of want missing from have, and those of have
// not in want, each in the order given.
func diff(have, want []iptables.Member) (missing, extra []iptables.Member) {
	return absent(want, have), absent(have, want)
}

// absent returns the members of a that are not in b.
func absent(a, b []iptables.Member) []iptables.Member {
	in := make(map[iptables.Member]bool, len(b))
	for _, m := range b {
		in[m] = true
	}
	var out []iptables.Member
	for _, m := range a {
		if !in[m] {
			out = append(out, m)
		}
	}
	return out
}

func problem(missing, extra []iptables.Member) string {
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, fmt.Sprintf("%d members missing (%s)", len(missing), list(missing)))
	}
	if len(extra) > 0 {
		parts = append(parts, fmt.Sprintf("%d extra (%s)", len(extra), list(extra)))
	}
	return strings.Join(parts, ", ")
}

func list(ms []iptables.Member) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = m.String()
	}
	return strings.Join(s, "; ")
}
