package proxier

import (
	"context"
	"errors"
	"time"
)

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
	return p.sync(ctx, nil, changes)
}

// sync makes the kernel serve s, or, with s nil, the State served with
// changes. Once the kernel is known (a sync succeeded since the last
// failure) and the node is the same, only the services that differ are
// validated, computed and planned: those changes names, or those of s that
// differ from the copies kept.
func (p *Proxier) sync(ctx context.Context, s *State, changes map[string]*Service) (res *Result, err error) {
	res = &Result{}
	t := time.Now()
	defer p.observeSync(t, res, &err)
	known := p.sv != nil && p.started && !p.readBack && !p.adopting && p.applied == p.sv.model
	switch {
	case s != nil && known && nodeEqual(&s.Node, &p.sv.node):
		err = p.syncChanges(ctx, p.sv.diff(s), res, t)
	case s != nil:
		err = p.syncFull(ctx, s, res, t)
	case known:
		err = p.syncChanges(ctx, changes, res, t)
	default:
		err = p.syncFull(ctx, p.sv.stateWith(changes), res, t)
	}
	var ve *ValidationError
	if errors.As(err, &ve) && res.Plan == nil {
		return nil, err
	}
	if s != nil {
		res.Warnings = p.warns.of(nil)
	} else {
		res.Warnings = p.warns.of(changes)
	}
	return res, err
}

// syncChanges applies changes to a kernel that holds p.sv.model.
func (p *Proxier) syncChanges(ctx context.Context, changes map[string]*Service, res *Result, t time.Time) error {
	lap := func(d *time.Duration) { now := time.Now(); *d += now.Sub(t); t = now }
	if err := p.sv.validate(changes, &p.cfg); err != nil {
		return err
	}
	p.warnChanged(changes)
	lap(&res.Phases.Validate)
	before := p.held
	d := p.sv.commit(changes, &p.cfg)
	drains := overlayDrains(d.have, d.want, p.draining, p.now())
	plan := makePlan(d.have, d.want)
	plan.SetChanges, plan.live = d.sets, p.sv.model.rules
	plan.linkName, plan.vipMode, plan.backends = p.cfg.LinkName, p.cfg.VIPMode, p.rules
	res.Plan = plan
	// The drains of the virtual servers touched are those just found;
	// the others' stay as they were.
	if p.draining == nil {
		p.draining = drainList{}
	}
	for k := range d.have.servers {
		delete(p.draining, k)
	}
	for k, ds := range drains {
		p.draining[k] = ds
	}
	res.Draining = p.draining.len()
	lap(&res.Phases.Plan)
	if p.ct != nil {
		staleFrontends(d.have, plan, p.ctPending)
	}
	if err := p.apply(ctx, plan, res); err != nil {
		p.readBack, p.held = true, before.plus(res.sent)
		// What it may now own, to read back: what it was asked for, and
		// what it held where that changed; rules unknown.
		p.applied = union(d.have, p.sv.model)
		for _, k := range existing(err) {
			delete(p.applied.servers, k)
			p.refused[k] = true
		}
		return err
	}
	p.held = heldOf(p.sv.model)
	return p.cleanFlows(ctx, res)
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
