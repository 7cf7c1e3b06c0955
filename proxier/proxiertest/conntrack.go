package proxiertest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/proxier"
)

// conntrackDep counts and fails the calls of a proxier.Conntrack: each
// filter of a Delete (one frontend's stale flows) is an operation. Under
// CutShort the filters before the failing one are applied, under Refuse
// every other one is.
type conntrackDep struct {
	in   *Injector
	next proxier.Conntrack
}

func (w *conntrackDep) Delete(ctx context.Context, filters ...conntrack.Filter) (int, error) {
	for i := range filters {
		if filters[i].Validate() != nil {
			return w.next.Delete(ctx, filters...) // refused: nothing reaches the kernel
		}
	}
	if len(filters) == 0 {
		return w.next.Delete(ctx)
	}
	descs := make([]string, len(filters))
	for i, f := range filters {
		to := "any address"
		if f.Addr.IsValid() {
			to = netip.AddrPortFrom(f.Addr, f.Port).String()
		}
		descs[i] = fmt.Sprintf("delete the %v flows to %s", f.Protocol, to)
		if len(f.Keep) > 0 {
			descs[i] += fmt.Sprintf(" not answered by %v", f.Keep)
		}
	}
	i, ie := w.in.call(proxier.SubsystemConntrack, 0, "Conntrack.Delete", descs...)
	if i < 0 {
		return w.next.Delete(ctx, filters...)
	}
	fam, _ := filters[i].Family()
	injected := &conntrack.Error{Op: "delete", Family: fam, Err: ie}
	switch ie.Mode {
	case CutShort:
		filters = filters[:i]
	case Refuse:
		filters = slices.Delete(slices.Clone(filters), i, i+1)
	}
	n, err := 0, error(nil)
	if len(filters) > 0 {
		n, err = w.next.Delete(ctx, filters...)
	}
	return n, errors.Join(injected, err)
}
