package proxier

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/sysctl"
)

// Making the kernel known: start (the link and the sysctls ensured, the
// ownership ledger read) and the read back of what the Proxier owns.

// start reads the ownership ledger, ensures the VIP link and the sysctl
// profile (with IPv6 forwarding when IPv6 is served), once, and after a
// failure. It returns the ledger, for the read back that follows.
func (p *Proxier) start(ctx context.Context, res *Result) (*ledger, error) {
	// The ledger first: it proves the back ends' objects are ours (or
	// absent) before the link or a sysctl is touched.
	l, err := p.readLedger(ctx, false)
	if err != nil {
		return nil, err
	}
	if a, ok := p.link.(adopter); ok && p.kernel.adopting {
		if err := a.Adopt(ctx, p.cfg.LinkName); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, opErr(SubsystemAddresses, fmt.Errorf("adopting kube-proxy's VIP link %s: %w", p.cfg.LinkName, err))
		}
	}
	created, err := p.link.Ensure(ctx, p.cfg.LinkName)
	if err != nil {
		return nil, opErr(SubsystemAddresses, fmt.Errorf("VIP link %s: %w", p.cfg.LinkName, err))
	}
	res.LinkCreated = created
	profile, err := p.sys.IPVSProfile(&sysctl.IPVSOptions{StrictARP: p.cfg.StrictARP, IPv6: enabledFamilies(&p.cfg)[IPv6]})
	if err != nil {
		return nil, opErr(SubsystemSysctl, fmt.Errorf("profile: %w", err))
	}
	if res.SysctlChanges, err = p.sys.Apply(ctx, profile); err != nil {
		return nil, opErr(SubsystemSysctl, err)
	}
	p.kernel.started(profile) // learn what an earlier run left behind, once
	return l, nil
}

// read returns the kernel's copy of what the proxier owns: the virtual
// servers and VIPs in its ledger (see ledger) or applied by this Proxier,
// with their destinations. Nothing else is read, so nothing else is ever
// changed: another program's virtual server on one of its VIPs at another
// port, a link-local or foreign address on its link. A virtual server at a
// key the State wants that is not the proxier's goes into the knowledge's
// foreign, and Sync refuses to apply over it (a *ConflictError) before
// sending anything. l is the ledger start just read, or nil to read it.
func (p *Proxier) read(ctx context.Context, want *desired, l *ledger) (*desired, error) {
	afterStart := l != nil // the first read since a (re)start
	if l == nil {
		var err error
		if l, err = p.readLedger(ctx, false); err != nil {
			return nil, err
		}
	}
	// The rules are known where the last apply of a family succeeded;
	// elsewhere (a restart, a failure) they are the ledger as read, so the
	// plan keeps its members until the removals are done.
	have := &desired{servers: map[ipvs.ServiceKey]*virtualServer{}, vips: map[netip.Addr]bool{}, rules: l.rules}
	for f, r := range p.kernel.applied.rules {
		if r != nil {
			have.rules[f] = r
		}
	}
	if err := p.readVIPs(ctx, l, have, afterStart); err != nil {
		return nil, err
	}
	svcs, err := p.services(ctx, p.expected(want, l))
	if err != nil {
		return nil, opErr(SubsystemIPVS, fmt.Errorf("reading: %w", err))
	}
	p.kernel.foreign = nil
	for _, si := range svcs {
		if err := p.readServer(ctx, si.Service, want, l, have); err != nil {
			return nil, err
		}
	}
	return have, nil
}

// expected are the keys of want the proxier owns (applied, or in the
// ledger l), which a service dump must find.
func (p *Proxier) expected(want *desired, l *ledger) map[ipvs.ServiceKey]bool {
	out := map[ipvs.ServiceKey]bool{}
	for k := range want.servers {
		if (p.kernel.applied.servers[k] != nil || l.servers[k]) && !p.excluded(k.Addr) {
			out[k] = true
		}
	}
	return out
}

// readServer puts svc, read from the kernel, into have with its
// destinations if it is the proxier's (see owns); if it is someone else's at
// a key want asks for, it goes into the knowledge's foreign. One inside
// Config.ExcludeCIDRs is neither.
func (p *Proxier) readServer(ctx context.Context, svc ipvs.Service, want *desired, l *ledger, have *desired) error {
	k := svc.Key()
	if p.excluded(k.Addr) {
		return nil // never ours (Config.ExcludeCIDRs), even in the ledger or on the link
	}
	mine := p.owns(k, want, l, have)
	if mine == nil {
		if want.servers[k] != nil {
			if p.kernel.foreign == nil {
				p.kernel.foreign = map[ipvs.ServiceKey]ipvs.Service{}
			}
			p.kernel.foreign[k] = svc
		}
		return nil // not ours: never read, never changed
	}
	dis, err := p.ipvs.Destinations(ctx, k)
	if err != nil {
		return opErr(SubsystemIPVS, fmt.Errorf("reading: %w", err))
	}
	owner := mine.owner
	if w := want.servers[k]; w != nil {
		owner = w.owner
	}
	ds := make([]ipvs.Destination, 0, len(dis))
	for _, di := range dis {
		ds = append(ds, di.Destination)
	}
	vs := &virtualServer{svc: svc, dests: newDestSet(ds), owner: owner}
	have.servers[k] = vs
	return nil
}

// owns returns the proxier's record of the virtual server at k (an empty
// one if it has none but owns it), or nil if k is not the proxier's: one
// it applied, one of an earlier run (in the ledger l and not refused), or,
// while adopting, kube-proxy's (wanted, or on a VIP of the ledger or the
// link; kube-proxy makes no firewall-mark virtual servers, so one at a
// wanted mark is someone else's). k is outside Config.ExcludeCIDRs.
func (p *Proxier) owns(k ipvs.ServiceKey, want *desired, l *ledger, have *desired) *virtualServer {
	if vs := p.kernel.applied.servers[k]; vs != nil {
		return vs
	}
	if l.servers[k] && !p.kernel.refused[k] {
		return &virtualServer{} // an earlier run's
	}
	if p.kernel.adopting && k.FWMark == 0 && (want.servers[k] != nil || l.vips[k.Addr] || have.vips[k.Addr]) {
		return &virtualServer{} // kube-proxy's (Config.AdoptKubeProxy)
	}
	return nil
}

// dumpTries is how many times services lists the virtual servers at most.
const dumpTries = 3

// services lists the virtual servers, again (up to dumpTries in all) while
// one of expected is missing, keeping every one seen.
// The kernel resumes a service dump that spans several replies by its
// position in a table all namespaces share, so another namespace deleting
// services between two replies makes it skip some of ours: read back as
// missing, such a one would be added again and, refused as existing, taken
// for someone else's; left out of a Cleanup, it would stay.
func (p *Proxier) services(ctx context.Context, expected map[ipvs.ServiceKey]bool) ([]ipvs.ServiceInfo, error) {
	var out []ipvs.ServiceInfo
	seen := map[ipvs.ServiceKey]bool{}
	for range dumpTries {
		svcs, err := p.ipvs.Services(ctx)
		if err != nil {
			return nil, err
		}
		for _, si := range svcs {
			if k := si.Service.Key(); !seen[k] {
				seen[k] = true
				out = append(out, si)
			}
		}
		missing := false
		for k := range expected {
			if !seen[k] {
				missing = true
				break
			}
		}
		if !missing {
			break
		}
	}
	return out, nil
}

// readVIPs puts into have the VIPs the proxier owns (in the ledger l,
// applied, or every one while adopting: the link is then kube-proxy's
// kube-ipvs0, just marked) held on the link in this mode, and into the
// knowledge's oldVIPs those held in the other mode, for apply to remove.
// The other mode costs a dump, so it is read only where leftovers can be:
// after a start (an earlier run's, or a removal that failed: every failure
// starts again), while adopting, and when a VIP the proxier owns is
// missing.
func (p *Proxier) readVIPs(ctx context.Context, l *ledger, have *desired, afterStart bool) error {
	k := &p.kernel
	owned := func(a netip.Addr) bool { return !p.excluded(a) && (l.vips[a] || k.applied.vips[a] || k.adopting) }
	cur, err := p.vips.bound(ctx, p.cfg.LinkName)
	if err != nil {
		return opErr(SubsystemAddresses, fmt.Errorf("reading VIP link %s: %w", p.cfg.LinkName, err))
	}
	for _, a := range cur {
		if owned(a) {
			have.vips[a] = true
		}
	}
	k.oldVIPs = nil
	missing := k.adopting || afterStart
	for a := range l.vips {
		missing = missing || (!have.vips[a] && !p.excluded(a))
	}
	for a := range k.applied.vips {
		missing = missing || !have.vips[a]
	}
	if !missing {
		return nil
	}
	old, err := p.vips.old(ctx, p.cfg.LinkName)
	if err != nil {
		return opErr(SubsystemAddresses, fmt.Errorf("reading VIP link %s: %w", p.cfg.LinkName, err))
	}
	for _, a := range old {
		if owned(a) {
			k.oldVIPs = append(k.oldVIPs, a)
		}
	}
	return nil
}
