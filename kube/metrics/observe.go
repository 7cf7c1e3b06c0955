package metrics

import (
	"time"

	"github.com/ipvskit/ipvskit/proxier"
)

// Observe records one event of the Proxier; pass the Metrics in
// proxier.Config.Observer. Events of other types are ignored.
func (m *Metrics) Observe(e proxier.Event) {
	switch e := e.(type) {
	case *proxier.SyncEvent:
		m.observeSync(e)
	case *proxier.DrainEvent:
		m.drained.Add(float64(e.Deleted))
		m.drainQueue.Set(float64(e.Queue))
		if e.Err != nil {
			m.errors.WithLabelValues("drain").Inc()
		}
	case *proxier.ReconcileEvent:
		for s, n := range e.Repairs {
			m.repairs.WithLabelValues(string(s)).Add(float64(n))
		}
		if e.Err != nil {
			m.errors.WithLabelValues("reconcile").Inc()
		}
	}
}

func (m *Metrics) observeSync(e *proxier.SyncEvent) {
	for _, f := range m.families {
		m.syncDuration.WithLabelValues(f).Observe(e.Duration.Seconds())
	}
	for _, p := range []struct {
		name string
		d    time.Duration
	}{
		{"validate", e.Phases.Validate}, {"plan", e.Phases.Plan}, {"start", e.Phases.Start},
		{"sets", e.Phases.Sets}, {"rules", e.Phases.Rules}, {"ipvs", e.Phases.IPVS},
		{"addresses", e.Phases.Addresses}, {"conntrack", e.Phases.Conntrack},
	} {
		// A phase that did not run (the start phase after the first sync,
		// the sets phase with a back end that does not tell them apart)
		// is left out rather than recorded as instantaneous.
		if p.d > 0 {
			m.phaseDuration.WithLabelValues(p.name).Observe(p.d.Seconds())
		}
	}
	for s, n := range e.Ops {
		m.ops.WithLabelValues(string(s)).Add(float64(n))
	}
	m.conntrackDeleted.Add(float64(e.Ops[proxier.SubsystemConntrack]))
	if e.Err != nil {
		s := string(e.ErrSubsystem)
		if s == "" {
			s = "state" // an invalid State or a conflict, before the kernel
		}
		m.errors.WithLabelValues(s).Inc()
		if e.ErrSubsystem == proxier.SubsystemRules || e.ErrSubsystem == proxier.SubsystemSets {
			for _, f := range m.families {
				m.restoreFailures.WithLabelValues(f).Inc()
			}
		}
		// A failed sync's counts are what the kernel holds as far as the
		// proxier knows (some of the sync may have been applied), unless
		// it says it cannot tell.
		if !e.Unsure {
			m.holdings(e)
		}
		return
	}
	end := seconds(e.Start.Add(e.Duration))
	for _, f := range m.families {
		m.lastSync.WithLabelValues(f).Set(end)
	}
	m.holdings(e)
}

// holdings sets the gauges of what the proxier holds.
func (m *Metrics) holdings(e *proxier.SyncEvent) {
	m.virtualServers.Set(float64(e.VirtualServers))
	m.vips.Set(float64(e.VIPs))
	m.drainQueue.Set(float64(e.Draining))
}

var _ proxier.Observer = (*Metrics)(nil)
