package proxier

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"slices"
)

// excludedIn returns the index of the first prefix of cidrs that holds a,
// or -1.
func excludedIn(cidrs []netip.Prefix, a netip.Addr) int {
	a = a.Unmap()
	return slices.IndexFunc(cidrs, func(p netip.Prefix) bool { return p.Contains(a) })
}

// excluded says whether a lies in one of Config.ExcludeCIDRs: no virtual
// server, address or route there is ever the proxier's.
func (p *Proxier) excluded(a netip.Addr) bool {
	return excludedIn(p.cfg.ExcludeCIDRs, a) >= 0
}

// unexcluded returns addrs without those inside cidrs (the node addresses
// that carry node ports).
func unexcluded(addrs []netip.Addr, cidrs []netip.Prefix) []netip.Addr {
	if len(cidrs) == 0 {
		return addrs
	}
	return slices.DeleteFunc(slices.Clone(addrs), func(a netip.Addr) bool { return excludedIn(cidrs, a) >= 0 })
}

// excludeCIDRs checks Config.ExcludeCIDRs: valid prefixes without host
// bits.
func (v *validator) excludeCIDRs(cidrs []netip.Prefix) {
	for i, p := range cidrs {
		v.prefix(fmt.Sprintf("config.excludeCIDRs[%d]", i), p)
	}
}

// excludedVIP reports (and adds a problem for) a VIP at path inside one of
// the validator's excluded prefixes.
func (v *validator) excludedVIP(path string, a netip.Addr) bool {
	i := excludedIn(v.exclude, a)
	if i < 0 {
		return false
	}
	v.add(path, a, "is inside config.excludeCIDRs[%d] %v, where the proxier owns no virtual server", i, v.exclude[i])
	return true
}

// excludedOnLink says whether the VIP link holds an address, or a VIP
// route, inside Config.ExcludeCIDRs: Cleanup then keeps the link, and
// with it what another program has there. A missing link holds none.
func (p *Proxier) excludedOnLink(ctx context.Context) (bool, error) {
	if len(p.cfg.ExcludeCIDRs) == 0 {
		return false, nil
	}
	ps, err := p.link.Addrs(ctx, p.cfg.LinkName)
	if err != nil {
		return false, ignoreLink(err)
	}
	for _, a := range ps {
		if p.excluded(a.Addr()) {
			return true, nil
		}
	}
	if rl, ok := p.link.(routeLink); ok {
		as, err := rl.Routes(ctx, p.cfg.LinkName)
		if err != nil {
			return false, ignoreLink(err)
		}
		if slices.ContainsFunc(as, p.excluded) {
			return true, nil
		}
	}
	return false, nil
}

// unbindOwned removes from the VIP link, in both VIP modes, the VIPs the
// proxier owns (in the ledger l or applied, outside ExcludeCIDRs): what
// Cleanup does in place of deleting a link it must keep.
func (p *Proxier) unbindOwned(ctx context.Context, l *ledger) error {
	owned := func(a netip.Addr) bool {
		return !p.excluded(a) && (l.vips[a] || (p.kernel.applied != nil && p.kernel.applied.vips[a]))
	}
	cur, err := p.vips.bound(ctx, p.cfg.LinkName)
	if err != nil {
		return ignoreLink(err)
	}
	if rm := slices.DeleteFunc(cur, func(a netip.Addr) bool { return !owned(a) }); len(rm) > 0 {
		if err := p.vips.update(ctx, p.cfg.LinkName, nil, rm); err != nil {
			return err
		}
	}
	old, err := p.vips.old(ctx, p.cfg.LinkName)
	if err != nil {
		return ignoreLink(err)
	}
	if rm := slices.DeleteFunc(old, func(a netip.Addr) bool { return !owned(a) }); len(rm) > 0 {
		if _, err := p.vips.removeOld(ctx, p.cfg.LinkName, rm); err != nil {
			return err
		}
	}
	return nil
}

// ignoreLink is err, but nil for a missing link or one that is not the
// link client's (Cleanup leaves such a link to Link.Delete, which keeps it).
func ignoreLink(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}
