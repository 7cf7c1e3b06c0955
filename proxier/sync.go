package proxier

import (
	"context"
	"errors"
	"time"
)

// Sync, Update and Plan run one pipeline (run): validate -> compute ->
// make the kernel known -> plan -> apply -> record. They differ only in
// what they compute (a step): the whole State, the changes to some
// services, or the whole State without keeping it (the dry run). The
// stages live in their own files: validate.go checks; served.go and
// commit.go compute (the served State, whole or changed); knowledge.go is
// what the Proxier knows of the kernel and its transitions, readback.go
// starts and reads the kernel back; plan.go diffs; apply.go sends; drain.go
// and conntrack.go keep what is left for later (pending).

// Sync makes the kernel serve s. It validates all of s first and applies
// nothing if anything is invalid (the error is a *ValidationError). Then it
// applies the difference from what it last applied, in an order that never
// opens a VIP before its virtual servers exist, and removes in reverse.
// A failure part way is returned; the next Sync reads back the objects the
// proxier owns and repairs them.
func (p *Proxier) Sync(ctx context.Context, s *State) (res *Result, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s == nil {
		return p.sync(ctx, p.stepFor(nil), nil)
	}
	return p.sync(ctx, p.syncStep(s), nil)
}

// Update changes the services the Proxier serves, by ID, and makes the
// kernel match, as Sync does with a whole State: a non-nil Service adds or
// replaces its ID, a nil one removes it. The node and the services not
// named stay as the last Sync or Update left them (before the first, there
// are none). It is the entry point for a caller that learns of changes one
// service at a time, such as an informer's handler: it validates, computes
// and plans only the services named, so its cost follows the change, not
// the number of services. The Proxier keeps a copy of each Service: the
// caller may reuse its own afterwards.
//
// The services named are validated against those that stay (a VIP, port or
// node port another service holds is refused); if any is invalid, the error
// is a *ValidationError and nothing changes, in the kernel or in what the
// Proxier serves. A failure after validation is returned as Sync's are,
// and the changes are kept: the next Sync, or Update (one with no changes
// retries), reads the kernel back and repairs it to the State with them.
func (p *Proxier) Update(ctx context.Context, changes map[string]*Service) (*Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sync(ctx, p.stepFor(changes), changes)
}

// Plan validates s and returns what a Sync would do, without touching the
// kernel (a dry run). Its String is the plan as ipvsadm and ip lines.
func (p *Proxier) Plan(s *State) (*Plan, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	res := &Result{}
	if err := p.run(context.Background(), dryRun{s}, res); err != nil {
		return nil, err
	}
	return res.Plan, nil
}

// syncStep is the step that makes the kernel serve s: once the kernel is
// known and the node is the same, the services of s that differ from the
// copies kept, and only those, are validated, computed and planned.
func (p *Proxier) syncStep(s *State) step {
	if sv := p.serving.sv; p.kernel.isKnown() && nodeEqual(&s.Node, &sv.node) {
		return partial(sv.diff(s))
	}
	return whole{s}
}

// stepFor is the step that makes the kernel serve the State served with
// changes: those alone once the kernel is known, that whole State when it
// is not (the first sync, after a failure).
func (p *Proxier) stepFor(changes map[string]*Service) step {
	if p.kernel.isKnown() {
		return partial(changes)
	}
	return whole{p.serving.sv.stateWith(changes)}
}

// sync runs st and reports it. The Result's warnings are those of the
// services changes names (all of them if nil: a Sync). A validation error
// is returned alone.
func (p *Proxier) sync(ctx context.Context, st step, changes map[string]*Service) (res *Result, err error) {
	res = &Result{}
	defer p.observeSync(time.Now(), res, &err)
	err = p.run(ctx, st, res)
	var ve *ValidationError
	if errors.As(err, &ve) && res.Plan == nil {
		return nil, err
	}
	res.Warnings = p.serving.warns.of(changes)
	return res, err
}

// step is what a run computes.
type step interface {
	// validate checks the step's input; nothing changes if it fails.
	validate(p *Proxier) error
	// compute returns what the kernel is to hold, and (but in a dry run)
	// makes it what the Proxier serves.
	compute(p *Proxier) *target
}

// target is what a step asks of the kernel.
type target struct {
	// want is what the plan makes the kernel hold: all of it, or the part
	// the changes touch.
	want *desired
	// have is what the kernel holds of what want touches; nil means all
	// it is known to hold (knowledge.applied), made known first.
	have *desired
	// whole is what the kernel holds once the plan is applied: the model
	// of the State served.
	whole *desired
	// sets are a partial plan's set members to add and delete (its
	// SetChanges); a whole plan applies whole rulesets.
	sets map[Family]*SetChanges
	// dry says to stop once planned.
	dry bool
	// peek, in a dry run, reads the kernel back first (without a start)
	// and records the take-over preview (PreviewTakeover).
	peek *previewRun
}

// whole is a whole State, computed and planned against all the kernel
// holds: the first sync, one after a failure, one whose node changed.
type whole struct{ s *State }

func (w whole) validate(p *Proxier) error { return w.s.Validate(&p.cfg) }

func (w whole) compute(p *Proxier) *target {
	p.serving.sv = build(w.s, &p.cfg)
	p.warnAll()
	m := p.serving.sv.model
	return &target{want: m, whole: m}
}

// dryRun is a whole State planned but not kept (Plan).
type dryRun struct{ s *State }

func (d dryRun) validate(p *Proxier) error { return d.s.Validate(&p.cfg) }

func (d dryRun) compute(p *Proxier) *target {
	m := compute(d.s, &p.cfg)
	return &target{want: m, whole: m, dry: true}
}

// partial is the changes to some services, by ID (see Update), computed
// and planned against the copies kept of the others: for a kernel known
// to hold the State served.
type partial map[string]*Service

func (c partial) validate(p *Proxier) error { return p.serving.sv.validate(c, &p.cfg) }

func (c partial) compute(p *Proxier) *target {
	p.warnChanged(c)
	d := p.serving.sv.commit(c, &p.cfg)
	return &target{want: d.want, have: d.have, whole: p.serving.sv.model, sets: d.sets}
}

// run takes st through the pipeline: validate, compute, make the kernel
// known (for a whole State), plan, apply, and record what the kernel now
// holds, or, after a failure, what it may.
func (p *Proxier) run(ctx context.Context, st step, res *Result) error {
	t := time.Now()
	lap := func(d *time.Duration) { now := time.Now(); *d += now.Sub(t); t = now }
	if err := st.validate(p); err != nil {
		return err
	}
	lap(&res.Phases.Validate)
	tg := st.compute(p)
	lap(&res.Phases.Plan)
	if tg.have == nil && !tg.dry {
		if err := p.makeKnown(ctx, tg.want, res); err != nil {
			return err
		}
		lap(&res.Phases.Start)
	}
	have := tg.have
	var read *peeked
	if tg.peek != nil {
		var err error
		if read, err = p.peek(ctx, tg.want); err != nil {
			return err
		}
		have = read.have
	} else if have == nil {
		have = p.kernel.applied
	}
	drains := overlayDrains(have, tg.want, p.pending.drains, p.now())
	plan := makePlan(have, tg.want)
	if tg.have != nil { // a partial plan changes the served rulesets' members
		plan.SetChanges, plan.live = tg.sets, tg.whole.rules
	}
	plan.linkName, plan.vipMode, plan.backends = p.cfg.LinkName, p.cfg.VIPMode, p.rules
	dc := p.syncd.take() // decided by makeKnown's start, if any
	if tg.dry {
		dc = p.syncd.preview(p.cfg.SyncDaemons)
	}
	plan.DaemonStops, plan.DaemonStarts = dc.stops, dc.starts
	res.Plan = plan
	if tg.peek != nil {
		tg.peek.record(p, read, tg.want, plan)
	}
	if tg.dry {
		return nil
	}
	// Tried or done, these are the drains: one whose weight-0 update
	// failed is read back and joins again, keeping its start time.
	p.pending.setDrains(drains, tg.have)
	res.Draining = p.pending.drains.len()
	lap(&res.Phases.Plan)
	if p.ct != nil {
		// Before applying: a failed apply leaves them pending too.
		staleFrontends(have, plan, p.pending.flows)
	}
	if err := p.apply(ctx, plan, res); err != nil {
		// What it may now own, to read back: what it held where the
		// plan changed it, and what it was asked for.
		p.kernel.failedApply(union(have, tg.whole), err, res.sent)
		return err
	}
	p.kernel.succeeded(tg.whole)
	return p.cleanFlows(ctx, res)
}

// makeKnown makes what the kernel holds of the Proxier's known before a
// whole State is planned: it starts (again) unless the kernel is known,
// reads back what the Proxier owns, and refuses (a *ConflictError) virtual
// servers of want that someone else holds; at a start it decides what to
// do with the sync daemons (planDaemons; a *DaemonConflictError).
func (p *Proxier) makeKnown(ctx context.Context, want *desired, res *Result) error {
	starting := p.kernel.needsStart()
	if starting {
		// After a failure the VIP link may be gone too (someone deleted
		// it), so it is ensured again before the read back.
		l, err := p.start(ctx, res)
		if err != nil {
			return err
		}
		have, err := p.read(ctx, want, l)
		if err != nil {
			return err
		}
		p.kernel.readDone(have)
	}
	if err := conflicts(want, p.kernel.foreign); err != nil {
		p.kernel.lose() // the foreign virtual server may go away
		return err
	}
	if starting {
		if err := p.planDaemons(ctx); err != nil {
			p.kernel.lose() // so the next Sync looks again
			return err
		}
	}
	return nil
}

// diff returns the services of s that differ from those served, and a nil
// Service for each ID served that s lacks.
func (sv *served) diff(s *State) map[string]*Service {
	changes := map[string]*Service{}
	found := 0
	for id := range s.Services {
		svc := s.Services[id]
		e := sv.entries[id]
		if e != nil {
			found++
		}
		if e == nil || !serviceEqual(e, &svc) {
			changes[id] = &svc
		}
	}
	if found < len(sv.entries) {
		for id := range sv.entries {
			if _, ok := s.Services[id]; !ok {
				changes[id] = nil
			}
		}
	}
	return changes
}

// stateWith returns the State served (none if sv is nil) with changes.
func (sv *served) stateWith(changes map[string]*Service) *State {
	s := &State{Services: map[string]Service{}}
	if sv != nil {
		s.Node = sv.node
		for id, e := range sv.entries {
			s.Services[id] = *e
		}
	}
	for id, svc := range changes {
		if svc == nil {
			delete(s.Services, id)
		} else {
			s.Services[id] = *svc
		}
	}
	return s
}
