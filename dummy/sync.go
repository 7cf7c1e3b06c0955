package dummy

import (
	"net/netip"
	"slices"
	"strconv"
)

// SyncResult is what Sync changed on the link.
type SyncResult struct {
	// Added are the wanted addresses Sync bound, as /32 or /128, sorted.
	Added []netip.Prefix
	// Removed are the addresses Sync unbound because they were not
	// wanted, sorted. An address bound with another prefix length than
	// /32 or /128 (for example by hand) is removed even if its address is
	// wanted: the wanted one is bound as a host address instead.
	Removed []netip.Prefix
}

// Changed reports whether Sync added or removed anything.
func (r SyncResult) Changed() bool { return len(r.Added)+len(r.Removed) > 0 }

// validateWanted checks every wanted address and returns them as a set of
// host prefixes. The first invalid one is named by its index.
func validateWanted(wanted []netip.Addr) (map[netip.Prefix]bool, error) {
	want := make(map[netip.Prefix]bool, len(wanted))
	for i, a := range wanted {
		if err := validateAddr("wanted["+strconv.Itoa(i)+"]", a); err != nil {
			return nil, err
		}
		want[hostPrefix(a)] = true
	}
	return want, nil
}

// plan compares what a link has with what is wanted (from validateWanted):
// add are the wanted host prefixes missing, del the prefixes present but not
// wanted, except the kernel's own IPv6 link-local one. Both sorted.
func plan(have []netip.Prefix, want map[netip.Prefix]bool) (add, del []netip.Prefix) {
	present := make(map[netip.Prefix]bool, len(have))
	for _, p := range have {
		present[p] = true
		if !want[p] && !kernelManaged(p) {
			del = append(del, p)
		}
	}
	for p := range want {
		if !present[p] {
			add = append(add, p)
		}
	}
	sortPrefixes(add)
	sortPrefixes(del)
	return add, del
}

// sortPrefixes sorts by address, then by length: IPv4 before IPv6.
func sortPrefixes(ps []netip.Prefix) {
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
}
