package proxier

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
)

// apply sends the plan phase by phase: additions (virtual servers, then
// VIPs), then removals (VIPs, then virtual servers), then the sync
// daemons.
func (p *Proxier) apply(ctx context.Context, pl *Plan, res *Result) error {
	ph := &res.Phases
	t := time.Now()
	lap := func(d *time.Duration) { now := time.Now(); *d += now.Sub(t); t = now }
	if len(pl.SetChanges) > 0 {
		// Whatever fails, the live rulesets end as the served State
		// says: a failed sync makes the next one read back and apply
		// them whole.
		defer pl.settle()
	}
	if err := p.applyRules(ctx, pl.Rules, res); err != nil {
		return err
	}
	if err := p.applyRules(ctx, pl.changeSets(false), res); err != nil {
		return err
	}
	lap(&ph.Rules)
	if pl.IPVSAdd.Len() > 0 {
		if err := p.applyIPVS(ctx, &pl.IPVSAdd, res); err != nil {
			if undo := undoOnForeign(&pl.IPVSAdd, err); undo != nil {
				if uerr := p.applyIPVS(ctx, undo, res); uerr != nil {
					err = errors.Join(err, fmt.Errorf("taking back destinations added to foreign virtual servers: %w", uerr))
				}
			}
			return opErr(SubsystemIPVS, err)
		}
	}
	lap(&ph.IPVS)
	// One batched call each: binding 10,000 VIPs is a few sends.
	if len(pl.Bind) > 0 {
		if err := p.updateVIPs(ctx, pl.Bind, nil, res); err != nil {
			return opErr(SubsystemAddresses, fmt.Errorf("binding VIPs: %w", err))
		}
	}
	// Held in the other VIPMode by an earlier run: gone only now that
	// this mode's form is there.
	if len(p.kernel.oldVIPs) > 0 {
		n, err := p.vips.removeOld(ctx, p.cfg.LinkName, p.kernel.oldVIPs)
		res.sent.addrs += n
		if err != nil {
			// Removing the addresses may have taken the link's IPv4
			// local routes, this mode's VIPs, with them, and adding
			// them back failed: which are left is unknown.
			res.sent.unsure = res.sent.unsure || (n > 0 && p.cfg.VIPMode == VIPLocalRoutes)
			return opErr(SubsystemAddresses, fmt.Errorf("removing VIPs held in the other VIP mode: %w", err))
		}
		p.kernel.oldVIPs = nil
	}
	if len(pl.Unbind) > 0 {
		if err := p.updateVIPs(ctx, nil, pl.Unbind, res); err != nil {
			return opErr(SubsystemAddresses, fmt.Errorf("unbinding VIPs: %w", err))
		}
	}
	lap(&ph.Addresses)
	if pl.IPVSDelete.Len() > 0 {
		if err := p.applyIPVS(ctx, &pl.IPVSDelete, res); err != nil {
			return opErr(SubsystemIPVS, err)
		}
	}
	lap(&ph.IPVS)
	err := p.applyRules(ctx, pl.RulesAfter, res)
	if err == nil {
		err = p.applyRules(ctx, pl.changeSets(true), res)
	}
	lap(&ph.Rules)
	if err != nil {
		return err
	}
	// The sync daemons last: serving comes first, and a daemon that cannot
	// start (its interface missing) fails the sync after it.
	err = p.applyDaemons(ctx, daemonChanges{pl.DaemonStops, pl.DaemonStarts}, res)
	lap(&ph.IPVS)
	return err
}

// applyIPVS sends b and counts in res what was sent and the virtual
// servers added and deleted.
func (p *Proxier) applyIPVS(ctx context.Context, b *ipvs.Batch, res *Result) error {
	err := p.ipvs.Apply(ctx, b)
	o := ipvsOutcome(b, err)
	res.sent.ipvs += o.sent
	res.sent.servers += serverChanges(b, o)
	return err
}

// updateVIPs binds add and unbinds remove and counts in res what was sent
// and the VIPs bound and unbound.
func (p *Proxier) updateVIPs(ctx context.Context, add, remove []netip.Addr, res *Result) error {
	err := p.vips.update(ctx, p.cfg.LinkName, add, remove)
	o := linkOutcome(len(add)+len(remove), err)
	res.sent.addrs += o.sent
	res.sent.vips += vipChanges(add, remove, o)
	return err
}

// applyRules applies each family's ruleset in m. What the back ends report
// of their work goes into res: set elements and rule writes, and the time
// spent on sets, which moves from the Rules phase to the Sets phase.
func (p *Proxier) applyRules(ctx context.Context, m map[Family]*iptables.Ruleset, res *Result) error {
	for _, f := range []Family{IPv4, IPv6} {
		r := m[f]
		if r == nil {
			continue
		}
		err := p.rules[f].Apply(ctx, r)
		st := p.rules[f].LastStats()
		res.SetElements += st.ElementsAdded + st.ElementsDeleted
		res.RuleWrites += st.RuleWrites
		res.Phases.Sets += st.SetsTime
		res.Phases.Rules -= st.SetsTime
		if err != nil {
			return opErr(SubsystemRules, fmt.Errorf("%v: %w", f, err))
		}
	}
	return nil
}
