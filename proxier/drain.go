package proxier

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ipvskit/ipvskit/ipvs"
)

// DefaultMaxDrain is how long a destination drains at most when
// Config.MaxDrain is 0: IPVS's own default timeout for an established TCP
// connection (ipvsadm --set's tcp, 900 s), so a connection idle for longer
// would have expired anyway.
const DefaultMaxDrain = 15 * time.Minute

// DrainResult says what a Drain did.
type DrainResult struct {
	// Ended are the drains the call ended, by virtual server and
	// destination: the destinations it deleted, and those it found gone.
	Ended []DrainEnd
	// Draining is how many destinations are still draining: the length of
	// the drain queue after the call.
	Draining int
}

// DrainEnd is one drain that ended.
type DrainEnd struct {
	Service     ipvs.ServiceKey
	Destination ipvs.DestinationKey
	// Since is when the destination started draining: when a Sync set its
	// weight to 0, or, for one an earlier run left at weight 0, when this
	// Proxier's first Sync found it.
	Since  time.Time
	Reason DrainReason
	// ActiveConns and InactiveConns are the connections the kernel counted
	// when the destination was deleted: not zero only for DrainExpired,
	// whose connections are cut.
	ActiveConns, InactiveConns uint32
}

// DrainReason says why a drain ended.
type DrainReason uint8

const (
	// DrainIdle: the destination had no connections left, active or
	// inactive, and was deleted.
	DrainIdle DrainReason = iota + 1
	// DrainExpired: it had drained for Config.MaxDrain and was deleted
	// with its connections (kubernetes#89392).
	DrainExpired
	// DrainVanished: it was no longer in the kernel (someone else deleted
	// it, or a failed Drain's deletes went through after all).
	DrainVanished
)

func (r DrainReason) String() string {
	switch r {
	case DrainIdle:
		return "idle"
	case DrainExpired:
		return "expired"
	case DrainVanished:
		return "vanished"
	}
	return "DrainReason(" + itoa(int(r)) + ")"
}

// drainList is the destinations that are draining, by virtual server, with
// the time each started.
type drainList map[ipvs.ServiceKey]map[ipvs.DestinationKey]time.Time

func (l drainList) len() int {
	n := 0
	for _, ds := range l {
		n += len(ds)
	}
	return n
}

// overlayDrains keeps in want every destination that have (what the kernel
// holds) has on a TCP virtual server want keeps, but that want's
// destinations no longer include: at weight 0, so it takes no new
// connections while its own carry on. It returns those destinations with
// the time each started draining: from was, or now if it starts now. So a
// destination of want that was draining is back at its weight (the plan
// updates it in place), and one that is draining but gone from have (its
// virtual server deleted, or deleted by someone else) is dropped. A
// weight-0 destination an earlier run left in the kernel, read back by
// the first Sync, joins the list like any other.
//
// UDP and SCTP destinations are not kept: the plan deletes them at once
// (kubernetes#71514: IPVS counts a UDP "connection" until its timeout, so
// a UDP destination whose clients keep sending would never drain; with
// expire_nodest_conn those clients move to a live destination on their
// next packet). A firewall-mark service's destinations drain as TCP ones
// do: its key does not say which protocols its mark brings.
func overlayDrains(have, want *desired, was drainList, now time.Time) drainList {
	next := drainList{}
	if have == nil {
		return next
	}
	for k, h := range have.servers {
		w := want.servers[k]
		if w == nil || k.Protocol != ipvs.TCP && k.FWMark == 0 {
			continue
		}
		cloned := false
		for _, d := range h.dests {
			dk := d.Key()
			if w.dests.has(dk) {
				continue
			}
			if !cloned { // compute's set is not ours to change
				w.dests, cloned = w.dests.clone(), true
			}
			d.Weight = 0
			w.dests.set(d)
			since, ok := was[k][dk]
			if !ok {
				since = now
			}
			if next[k] == nil {
				next[k] = map[ipvs.DestinationKey]time.Time{}
			}
			next[k][dk] = since
		}
	}
	return next
}

// Drain ends the drains that are over: it reads each virtual server that
// has draining destinations once, then deletes, in one batch, those with
// no connections left (active + inactive, as kube-proxy counts them) and
// those that have drained for Config.MaxDrain. The caller calls it on its
// own timer (kube-proxy checks every minute); nothing in the Proxier runs
// in the background. Drain runs one at a time with Sync, and sends nothing
// when nothing is draining.
//
// A failure is returned with what is known; the destinations stay on the
// drain list (the next Drain finds the ones deleted anyway gone) and the
// next Sync reads back what the Proxier owns.
//
// Config.Observer gets a *DrainEvent for each call, and Config.Logger a line.
func (p *Proxier) Drain(ctx context.Context) (res *DrainResult, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	res = &DrainResult{Draining: p.pending.drains.len()}
	defer p.observeDrain(time.Now(), res, &err)
	if res.Draining == 0 {
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("proxier: drain: %w", err)
	}
	now, maxDrain := p.now(), p.cfg.MaxDrain
	if maxDrain == 0 {
		maxDrain = DefaultMaxDrain
	}
	var (
		b       ipvs.Batch
		deletes []DrainEnd
		gone    []DrainEnd
	)
	for _, k := range slices.SortedFunc(maps.Keys(p.pending.drains), compareServiceKeys) {
		dis, err := p.ipvs.Destinations(ctx, k)
		if err != nil {
			return res, opErr(SubsystemIPVS, fmt.Errorf("drain: reading %v: %w", k, err))
		}
		byKey := make(map[ipvs.DestinationKey]ipvs.DestinationInfo, len(dis))
		for _, di := range dis {
			byKey[di.Key()] = di
		}
		for _, dk := range slices.SortedFunc(maps.Keys(p.pending.drains[k]), compareDestKeys) {
			e := DrainEnd{Service: k, Destination: dk, Since: p.pending.drains[k][dk]}
			di, ok := byKey[dk]
			switch {
			case !ok:
				e.Reason = DrainVanished
				gone = append(gone, e)
				continue
			case uint64(di.ActiveConns)+uint64(di.InactiveConns) == 0:
				e.Reason = DrainIdle
			case now.Sub(e.Since) >= maxDrain:
				e.Reason, e.ActiveConns, e.InactiveConns = DrainExpired, di.ActiveConns, di.InactiveConns
			default:
				continue
			}
			b.DeleteDestination(k, dk)
			deletes = append(deletes, e)
		}
	}
	p.endDrains(gone)
	res.Ended = gone
	if b.Len() > 0 {
		if err := p.ipvs.Apply(ctx, &b); err != nil {
			p.kernel.lose() // which deletes went through is not known
			res.Draining = p.pending.drains.len()
			return res, opErr(SubsystemIPVS, fmt.Errorf("drain: %w", err))
		}
	}
	p.endDrains(deletes)
	res.Ended = append(res.Ended, deletes...)
	slices.SortFunc(res.Ended, func(x, y DrainEnd) int {
		if c := compareServiceKeys(x.Service, y.Service); c != 0 {
			return c
		}
		return compareDestKeys(x.Destination, y.Destination)
	})
	res.Draining = p.pending.drains.len()
	return res, nil
}

// endDrains takes the ended drains' destinations off the drain list and out
// of what the Proxier believes it applied (copying each virtual server it
// changes, once: the applied state may share them with a returned plan).
func (p *Proxier) endDrains(ends []DrainEnd) {
	copied := map[ipvs.ServiceKey]bool{}
	for _, e := range ends {
		delete(p.pending.drains[e.Service], e.Destination)
		if len(p.pending.drains[e.Service]) == 0 {
			delete(p.pending.drains, e.Service)
		}
		if p.kernel.applied == nil {
			continue
		}
		vs := p.kernel.applied.servers[e.Service]
		if vs == nil {
			continue
		}
		if !copied[e.Service] {
			c := *vs
			c.dests = vs.dests.clone()
			vs, copied[e.Service] = &c, true
			p.kernel.applied.servers[e.Service] = vs
		}
		vs.dests.remove(e.Destination)
	}
}

// observeDrain tells the Observer and the Logger about a Drain that started
// at start.
func (p *Proxier) observeDrain(start time.Time, res *DrainResult, errp *error) {
	if p.cfg.Observer == nil && p.cfg.Logger == nil {
		return
	}
	ev := &DrainEvent{Start: start, Duration: time.Since(start), Queue: res.Draining, Err: *errp}
	for _, e := range res.Ended {
		if e.Reason != DrainVanished {
			ev.Deleted++
		}
	}
	if p.cfg.Observer != nil {
		p.cfg.Observer.Observe(ev)
	}
	if l := p.cfg.Logger; l != nil {
		switch {
		case ev.Err != nil:
			l.Warn("proxier: drain failed", "error", ev.Err, "draining", ev.Queue)
		case len(res.Ended) > 0:
			for _, e := range res.Ended {
				l.Info("proxier: drain ended", "service", e.Service.String(), "destination", e.Destination.String(),
					"reason", e.Reason.String(), "since", e.Since, "activeConns", e.ActiveConns, "inactiveConns", e.InactiveConns)
			}
		default:
			l.Debug("proxier: drained nothing", "draining", ev.Queue)
		}
	}
}

func compareDestKeys(x, y ipvs.DestinationKey) int {
	if c := x.Addr.Compare(y.Addr); c != 0 {
		return c
	}
	return int(x.Port) - int(y.Port)
}

// pending is the work syncs leave for later calls: the destinations
// draining, which Drain deletes, and the datagram frontends whose stale
// flows are still to be deleted (see conntrack.go).
type pending struct {
	drains drainList
	flows  map[ipvs.ServiceKey]bool
}

// setDrains records the drains a plan found: all of them for a plan of
// everything the kernel holds (touched nil); for a partial one, those of
// the virtual servers it touched, the others' staying as they were.
func (pd *pending) setDrains(next drainList, touched *desired) {
	if touched == nil {
		pd.drains = next
		return
	}
	if pd.drains == nil {
		pd.drains = drainList{}
	}
	for k := range touched.servers {
		delete(pd.drains, k)
	}
	for k, ds := range next {
		pd.drains[k] = ds
	}
}
