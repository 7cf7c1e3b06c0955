package agent

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ipvskit/ipvskit/kube/convert"
	"github.com/ipvskit/ipvskit/proxier"
)

// sync is the runner's function. It converts the changes the informers
// reported since the last sync alone and hands them to the Proxier's
// Update; or, once every SyncPeriod, converts them alone the same way and
// Syncs the whole State (which validates and compares all of it); or, for
// the first sync, after a failure and when the node changed, converts
// every object again and Syncs that.
func (a *Agent) sync(ctx context.Context) error {
	if a.afterSync != nil {
		defer a.afterSync()
	}
	keys := a.pend.take()
	n, err := a.convertNode()
	if err != nil {
		a.log.Warn("sync not attempted", "err", err)
		a.failed = true
		return err
	}
	if a.conv == nil || a.failed || !sameNode(a.conv.Node(), n) {
		err = a.syncWhole(ctx, n)
	} else {
		err = a.syncChanges(ctx, keys, a.clock.Since(a.lastWhole) >= a.o.Config.SyncPeriod)
	}
	a.failed = err != nil
	return err
}

// syncWhole converts the whole cluster and syncs the Proxier with it.
func (a *Agent) syncWhole(ctx context.Context, n convert.Node) error {
	start := a.clock.Now()
	st := a.wholeState(n)
	if a.adopting {
		a.previewTakeover(ctx, st)
	}
	res, err := a.p.Sync(ctx, st)
	if err != nil {
		a.log.Warn("sync failed", "err", err)
		return err
	}
	a.adopting = false
	a.lastWhole = start
	a.served = st.Services
	a.hc = healthChecksOf(st.Services)
	a.synced(res)
	return nil
}

// wholeState converts every object the informers hold for node n: a new
// Converter, whose State (with the agent's own choices) it returns.
func (a *Agent) wholeState(n convert.Node) *proxier.State {
	old := a.conv
	a.conv = convert.NewConverter(n)
	svcs := a.src.services()
	for _, s := range svcs {
		a.conv.SetService(s)
	}
	for _, s := range a.src.slices() {
		a.conv.SetSlice(s)
	}
	a.conv.Changes()
	st := a.conv.State()
	own := newReportLog()
	for id, s := range st.Services {
		s, rs := a.decorate(id, s)
		st.Services[id] = s
		own.set("port "+id, rs)
	}
	for _, s := range svcs {
		own.set("service "+s.Namespace+"/"+s.Name, annotationReports(s, a.o.Config.Scheduler))
	}
	var news []report
	for _, s := range a.conv.Skipped() {
		if old == nil || !old.Reports(s) {
			news = append(news, report{service: s.Service, reason: s.Reason})
		}
	}
	for r := range own.count {
		if a.own.count[r] == 0 {
			news = append(news, r)
		}
	}
	a.own = own
	a.logReports(news)
	return &st
}

// syncChanges converts the objects of keys again and hands the services
// that changed to the Proxier's Update, or with whole the State they make
// to its Sync.
func (a *Agent) syncChanges(ctx context.Context, keys pendingKeys, whole bool) error {
	start := a.clock.Now()
	var news []report
	for k := range keys.services {
		ns, name, _ := strings.Cut(k, "/")
		s, err := a.src.svcs.Services(ns).Get(name)
		if err != nil {
			a.conv.DeleteService(ns, name)
			s = nil
		} else {
			a.conv.SetService(s)
		}
		var rs []report
		if s != nil {
			rs = annotationReports(s, a.o.Config.Scheduler)
		}
		news = append(news, a.own.set("service "+k, rs)...)
	}
	for k := range keys.slices {
		ns, name, _ := strings.Cut(k, "/")
		if s, err := a.src.eps.EndpointSlices(ns).Get(name); err != nil {
			a.conv.DeleteSlice(ns, name)
		} else {
			a.conv.SetSlice(s)
		}
	}
	changes, skipped := a.conv.Changes()
	for _, s := range skipped {
		news = append(news, report{service: s.Service, reason: s.Reason})
	}
	for id, s := range changes {
		var rs []report
		if s != nil {
			var d proxier.Service
			d, rs = a.decorate(id, *s)
			changes[id] = &d
		}
		news = append(news, a.own.set("port "+id, rs)...)
	}
	a.logReports(news)
	for id, s := range changes {
		if s == nil {
			delete(a.served, id)
		} else {
			a.served[id] = *s
		}
	}
	var res *proxier.Result
	var err error
	if whole {
		res, err = a.p.Sync(ctx, &proxier.State{Services: a.served, Node: a.conv.StateNode()})
	} else {
		res, err = a.p.Update(ctx, changes)
	}
	if err != nil {
		a.log.Warn("sync failed", "err", err, "whole", whole)
		return err
	}
	if whole {
		a.lastWhole = start
	}
	for id, s := range changes {
		a.hc.set(id, s)
	}
	a.synced(res)
	return nil
}

// decorate adds to a converted service what the agent decides beside the
// converter: the VIPs ipvs.excludeCIDRs drops, and the scheduler.
func (a *Agent) decorate(id string, s proxier.Service) (proxier.Service, []report) {
	st := proxier.State{Services: map[string]proxier.Service{id: s}}
	var rs []report
	for _, sk := range dropExcluded(&st, a.o.Config.ExcludeCIDRs) {
		rs = append(rs, report{service: sk.Service, reason: sk.Reason})
	}
	key, _, _ := strings.Cut(id, ":")
	ns, name, _ := strings.Cut(key, "/")
	var svcs []*corev1.Service
	if svc, err := a.src.svcs.Services(ns).Get(name); err == nil {
		svcs = append(svcs, svc)
	}
	applySchedulers(&st, svcs, a.o.Config.Scheduler)
	return st.Services[id], rs
}

// synced reports a sync that succeeded.
func (a *Agent) synced(res *proxier.Result) {
	a.firstSyncEnd.CompareAndSwap(0, a.clock.Now().UnixNano())
	if a.hooks.synced != nil {
		a.hooks.synced(a.hc, res)
	}
}

// state is the State the cluster asks for now, converted whole.
func (a *Agent) state() (*proxier.State, error) {
	n, err := a.convertNode()
	if err != nil {
		return nil, err
	}
	return a.wholeState(n), nil
}

// annotationReports are the reports of the scheduler annotations of s the
// agent cannot apply.
func annotationReports(s *corev1.Service, def string) []report {
	if s.Annotations[AnnotationScheduler] == "" && s.Annotations[AnnotationSchedulerFlags] == "" {
		return nil
	}
	if _, _, err := schedulerOf(s, def); err != nil {
		return []report{{annotation: true, reason: err.Error()}}
	}
	return nil
}
