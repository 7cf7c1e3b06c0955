package proxier

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/ipvskit/ipvskit/ipvs"
)

// ErrSyncNeeded is returned by Reconcile after a Sync that failed: the
// proxier no longer knows what the kernel holds, and the next Sync reads it
// back and repairs it.
var ErrSyncNeeded = errors.New("proxier: the last Sync failed: the next Sync repairs the kernel")

// Drift is one difference Reconcile found between what the proxier applied
// and what the kernel held.
type Drift struct {
	// Subsystem is SubsystemIPVS, SubsystemAddresses (the VIP link and its
	// addresses), SubsystemRules (a back end's tables, chains and jump
	// rules), SubsystemSets (its sets or ipsets) or SubsystemSysctl.
	Subsystem Subsystem
	// Family is the netfilter back end's family, for SubsystemRules and
	// SubsystemSets.
	Family Family
	// Object names what differs: "virtual server tcp 198.18.0.1:80",
	// "destination tcp 198.18.0.1:80 -> 198.18.1.1:8080", "link
	// ipvskit0", "address 198.18.0.1 on ipvskit0", a back end's object
	// ("set KUBE-CLUSTER-IP", "table ip ipvskit", see iptables.ObjectDrift), or a
	// sysctl key.
	Object string
	// Problem says what was wrong: "missing", "not applied" (an owned
	// object the proxier did not make, removed), or the values found and
	// wanted ("scheduler wlc, want rr").
	Problem string
}

func (d Drift) String() string {
	if d.Family != 0 {
		return fmt.Sprintf("%v %v: %s: %s", d.Subsystem, d.Family, d.Object, d.Problem)
	}
	return fmt.Sprintf("%v: %s: %s", d.Subsystem, d.Object, d.Problem)
}

// ReconcileReport says what Reconcile found; everything it lists was
// repaired unless Reconcile returned an error.
type ReconcileReport struct {
	// Drift lists each difference, in the order of the repairs: sysctls,
	// rules, the VIP link, then virtual servers and VIPs, then the sync
	// daemons of Config.SyncDaemons ("master sync daemon": "missing", or
	// the parameters found and wanted).
	Drift []Drift
	// ConntrackDeleted is how many stale UDP and SCTP flows were deleted
	// (with Deps.Conntrack): those of the datagram frontends the repair
	// re-created, gave destinations back to, or took destinations from,
	// and those a Sync left pending.
	ConntrackDeleted int
}

// String lists the drift, one per line.
func (r *ReconcileReport) String() string {
	var b strings.Builder
	for _, d := range r.Drift {
		b.WriteString(d.String() + "\n")
	}
	return b.String()
}

// Reconcile reads the kernel back and repairs every difference from what
// the proxier last applied, touching only what it owns: a sysctl of the
// profile changed, a back end's rules or sets changed or deleted (the back
// end's Check, then Repair), the VIP link deleted (re-created, every VIP
// bound again) or a VIP unbound, a virtual server or destination deleted
// or changed. Owned objects the proxier did not apply are removed: a
// destination added to one of its virtual servers, a virtual server or an
// address on its VIP link. A draining destination that someone deleted is
// not put back: its drain ends (Drain reports it no more). A sync daemon
// of Config.SyncDaemons that stopped is started again, and one whose
// parameters changed is stopped and started as configured. Other virtual
// servers, links, tables, chains and sets are not read, so never reported
// nor changed. Repairs follow Sync's order: rules before virtual servers,
// VIPs bound last.
//
// With Deps.Conntrack, the stale flows of the UDP and SCTP frontends the
// repair re-created, gave destinations back to or took destinations from
// are deleted afterwards, as after a Sync: a client that kept sending while
// its virtual server was gone would otherwise never be answered.
//
// The kernel is read once per subsystem: the sysctls of the profile, each
// back end's Check, the VIP link's addresses, and the virtual servers the
// proxier owns with their destinations. With no drift nothing is written.
//
// Before the first Sync (and after Cleanup) there is nothing to compare
// with: the report is empty. After a failed Sync (or Drain) it returns
// ErrSyncNeeded. If a repair fails, the error (an *OpError naming the
// subsystem) is returned with the report so far, and the next Sync reads
// the kernel back and repairs the rest. Reconcile runs one at a time with
// Sync and Drain and honours ctx. Config.Observer gets a *ReconcileEvent
// for each call, and Config.Logger a line per drift.
func (p *Proxier) Reconcile(ctx context.Context) (rep *ReconcileReport, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rep = &ReconcileReport{}
	defer p.observeReconcile(time.Now(), rep, &err)
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	switch p.kernel.state {
	case unknown:
		return rep, nil // nothing applied to compare with
	case readBack, failed:
		return rep, ErrSyncNeeded
	}
	ruleDrift, linkGone, err := p.checkOthers(ctx, rep)
	if err != nil {
		return rep, err
	}
	err = p.repair(ctx, rep, ruleDrift, linkGone)
	if err == nil {
		err = p.repairDaemons(ctx, rep)
	}
	if err != nil {
		// As after a failed Sync: read back what it owns, apply every
		// family's rules, on the next Sync.
		p.kernel.failedRepair()
		return rep, err
	}
	res := &Result{}
	err = p.cleanFlows(ctx, res) // failed ones stay pending for the next Sync
	rep.ConntrackDeleted = res.ConntrackDeleted
	return rep, err
}

// checkOthers reads the sysctls, the rules and the VIP link, adds their
// drift to rep, and says which families' rules drifted and whether the
// link is gone. It changes nothing.
func (p *Proxier) checkOthers(ctx context.Context, rep *ReconcileReport) (rules map[Family]bool, linkGone bool, err error) {
	if p.kernel.profile != nil {
		changes, err := p.sys.Check(ctx, p.kernel.profile)
		if err != nil {
			return nil, false, opErr(SubsystemSysctl, fmt.Errorf("reconcile: checking: %w", err))
		}
		for _, c := range changes {
			rep.Drift = append(rep.Drift, Drift{Subsystem: SubsystemSysctl, Object: c.Key, Problem: fmt.Sprintf("%q, want %q", c.Old, c.New)})
		}
	}
	rules = map[Family]bool{}
	for _, f := range []Family{IPv4, IPv6} {
		be := p.rules[f]
		if be == nil || p.kernel.applied.rules[f] == nil {
			continue
		}
		ds, err := be.Check(ctx)
		if err != nil {
			return nil, false, opErr(SubsystemRules, fmt.Errorf("reconcile: checking %v: %w", f, err))
		}
		for _, d := range ds {
			sub := SubsystemRules
			if strings.HasPrefix(d.Object, "set ") {
				sub = SubsystemSets
			}
			rep.Drift = append(rep.Drift, Drift{Subsystem: sub, Family: f, Object: d.Object, Problem: d.Problem})
			rules[f] = true
		}
	}
	if _, err := p.link.Addrs(ctx, p.cfg.LinkName); errors.Is(err, fs.ErrNotExist) {
		rep.Drift = append(rep.Drift, Drift{Subsystem: SubsystemAddresses, Object: "link " + p.cfg.LinkName, Problem: "missing"})
		linkGone = true
	} else if err != nil {
		return nil, false, opErr(SubsystemAddresses, fmt.Errorf("reconcile: reading VIP link %s: %w", p.cfg.LinkName, err))
	}
	return rules, linkGone, nil
}

// repair makes the sysctls and the rules what was applied, re-creates the
// link, then reads the virtual servers and VIPs back and sends what closes
// the difference, as Sync's plan would.
func (p *Proxier) repair(ctx context.Context, rep *ReconcileReport, rules map[Family]bool, linkGone bool) error {
	if slices.ContainsFunc(rep.Drift, func(d Drift) bool { return d.Subsystem == SubsystemSysctl }) {
		if _, err := p.sys.Apply(ctx, p.kernel.profile); err != nil {
			return opErr(SubsystemSysctl, fmt.Errorf("reconcile: %w", err))
		}
	}
	for _, f := range []Family{IPv4, IPv6} {
		if rules[f] {
			if err := p.rules[f].Repair(ctx); err != nil {
				return opErr(SubsystemRules, fmt.Errorf("reconcile: repairing %v: %w", f, err))
			}
		}
	}
	if linkGone {
		if _, err := p.link.Ensure(ctx, p.cfg.LinkName); err != nil {
			return opErr(SubsystemAddresses, fmt.Errorf("reconcile: re-creating VIP link %s: %w", p.cfg.LinkName, err))
		}
	}
	have, err := p.read(ctx, p.kernel.applied, nil)
	if err != nil {
		return err
	}
	p.kernel.held = heldOf(have)
	p.endVanishedDrains(have)
	rep.Drift = append(rep.Drift, serverDrift(have, p.kernel.applied)...)
	rep.Drift = append(rep.Drift, vipDrift(have, p.kernel.applied, p.cfg.LinkName, p.cfg.VIPMode)...)
	plan := makePlan(have, p.kernel.applied)
	if plan.Empty() {
		return nil
	}
	if p.ct != nil {
		// A datagram frontend re-created or given its destinations back
		// may hold flows made while it was gone (see conntrack.go).
		staleFrontends(have, plan, p.pending.flows)
	}
	res := &Result{}
	if err := p.apply(ctx, plan, res); err != nil {
		p.kernel.held = p.kernel.held.plus(res.sent)
		return err
	}
	p.kernel.held = heldOf(p.kernel.applied)
	return nil
}

// endVanishedDrains ends the drain of every draining destination have
// lacks (deleted by someone, or with its virtual server), so that the
// repair does not put it back.
func (p *Proxier) endVanishedDrains(have *desired) {
	var gone []DrainEnd
	for k, ds := range p.pending.drains {
		for dk, since := range ds {
			if _, ok := lookupDest(have.servers[k], dk); !ok {
				gone = append(gone, DrainEnd{Service: k, Destination: dk, Since: since, Reason: DrainVanished})
			}
		}
	}
	p.endDrains(gone)
}

// observeReconcile tells the Observer and the Logger about a Reconcile that
// started at start.
func (p *Proxier) observeReconcile(start time.Time, rep *ReconcileReport, errp *error) {
	if p.cfg.Observer == nil && p.cfg.Logger == nil {
		return
	}
	ev := &ReconcileEvent{Start: start, Duration: time.Since(start), Repairs: map[Subsystem]int{}, Err: *errp}
	for _, d := range rep.Drift {
		ev.Repairs[d.Subsystem]++
	}
	if p.cfg.Observer != nil {
		p.cfg.Observer.Observe(ev)
	}
	if l := p.cfg.Logger; l != nil {
		for _, d := range rep.Drift {
			args := []any{"subsystem", string(d.Subsystem), "object", d.Object, "problem", d.Problem}
			if d.Family != 0 {
				args = append(args, "family", d.Family.String())
			}
			l.Warn("proxier: drift", args...)
		}
		switch {
		case ev.Err != nil:
			l.Warn("proxier: reconcile failed", "error", ev.Err, "subsystem", string(failedSubsystem(ev.Err)), "duration", ev.Duration)
		case len(rep.Drift) > 0:
			l.Info("proxier: reconciled", "repairs", len(rep.Drift), "duration", ev.Duration)
		default:
			l.Debug("proxier: reconciled, no drift", "duration", ev.Duration)
		}
	}
}

// serverDrift lists how the virtual servers read back (have) differ from
// those applied (want), in a stable order.
func serverDrift(have, want *desired) []Drift {
	var out []Drift
	add := func(obj, problem string) {
		out = append(out, Drift{Subsystem: SubsystemIPVS, Object: obj, Problem: problem})
	}
	keys := sortedKeys(union(have, want).servers)
	for _, k := range keys {
		h, w := have.servers[k], want.servers[k]
		obj := "virtual server " + k.String()
		switch {
		case h == nil:
			add(obj, "missing")
			continue
		case w == nil:
			add(obj, "not applied (on the VIP link)")
			continue
		case h.svc != w.svc:
			add(obj, serviceDiff(h.svc, w.svc))
		}
		for _, d := range newDestSet(slices.Concat(h.dests, w.dests)) {
			dk := d.Key()
			hd, inHave := h.dests.get(dk)
			wd, inWant := w.dests.get(dk)
			obj := "destination " + k.String() + " -> " + dk.String()
			switch {
			case !inHave:
				add(obj, "missing")
			case !inWant:
				add(obj, "not applied")
			case hd != wd:
				add(obj, destinationDiff(hd, wd))
			}
		}
	}
	return out
}

// vipDrift lists the VIPs of the VIP link that differ, held as mode holds
// them.
func vipDrift(have, want *desired, link string, mode VIPMode) []Drift {
	var out []Drift
	all := map[netip.Addr]bool{}
	for a := range have.vips {
		all[a] = true
	}
	for a := range want.vips {
		all[a] = true
	}
	addrs := make([]netip.Addr, 0, len(all))
	for a := range all {
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	for _, a := range addrs {
		obj := vipObject(mode, a, link)
		switch {
		case !have.vips[a]:
			out = append(out, Drift{Subsystem: SubsystemAddresses, Object: obj, Problem: "missing"})
		case !want.vips[a]:
			out = append(out, Drift{Subsystem: SubsystemAddresses, Object: obj, Problem: "not applied"})
		}
	}
	return out
}

// fields are the fields of an IPVS object that differ, each with its
// value in the kernel (have) and in the plan (want); "none" for an empty
// one. Reconcile's drifts and the take-over preview render them.
type fields []fieldDiff

type fieldDiff struct{ name, have, want string }

func (f *fields) diff(name string, have, want any) {
	h, w := fmt.Sprint(have), fmt.Sprint(want)
	if h == "" {
		h = "none"
	}
	if w == "" {
		w = "none"
	}
	if h != w {
		*f = append(*f, fieldDiff{name, h, w})
	}
}

// drift renders f as "name have, want want; ...".
func (f fields) drift() string {
	out := make([]string, len(f))
	for i, d := range f {
		out[i] = fmt.Sprintf("%s %s, want %s", d.name, d.have, d.want)
	}
	return strings.Join(out, "; ")
}

// change renders f as "name have -> want, ...".
func (f fields) change() string {
	out := make([]string, len(f))
	for i, d := range f {
		out[i] = fmt.Sprintf("%s %s -> %s", d.name, d.have, d.want)
	}
	return strings.Join(out, ", ")
}

func serviceFieldDiffs(h, w ipvs.Service) fields {
	var f fields
	f.diff("scheduler", h.Scheduler, w.Scheduler)
	f.diff("scheduler flags", h.SchedFlags, w.SchedFlags)
	f.diff("one-packet", h.OnePacket, w.OnePacket)
	f.diff("persistence", h.Persistence.Timeout, w.Persistence.Timeout)
	f.diff("persistence prefix", h.Persistence.PrefixLen, w.Persistence.PrefixLen)
	f.diff("persistence engine", h.PersistenceEngine, w.PersistenceEngine)
	return f
}

func serviceDiff(h, w ipvs.Service) string {
	f := serviceFieldDiffs(h, w)
	if len(f) == 0 {
		return fmt.Sprintf("%+v, want %+v", h, w)
	}
	return f.drift()
}

func destinationFieldDiffs(h, w ipvs.Destination) fields {
	var f fields
	f.diff("forwarding", h.Forward, w.Forward)
	f.diff("weight", h.Weight, w.Weight)
	f.diff("upper threshold", h.UpperThreshold, w.UpperThreshold)
	f.diff("lower threshold", h.LowerThreshold, w.LowerThreshold)
	f.diff("tunnel", h.TunnelType, w.TunnelType)
	f.diff("tunnel port", h.TunnelPort, w.TunnelPort)
	f.diff("tunnel flags", h.TunnelFlags, w.TunnelFlags)
	f.diff("family", h.Family, w.Family)
	return f
}

func destinationDiff(h, w ipvs.Destination) string {
	f := destinationFieldDiffs(h, w)
	if len(f) == 0 {
		return fmt.Sprintf("%+v, want %+v", h, w)
	}
	return f.drift()
}
