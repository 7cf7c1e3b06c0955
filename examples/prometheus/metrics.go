package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ipvskit/ipvskit/proxier"
)

// Metrics is a proxier.Observer that exports what the proxier does to
// Prometheus. Where kube-proxy has a metric for the same thing, it has
// kube-proxy's name (subsystem "kubeproxy"), so existing dashboards and
// alerts work; the rest are under "ipvskit". Pass it in
// proxier.Config.Observer.
type Metrics struct {
	syncDuration     prometheus.Histogram
	lastSync         prometheus.Gauge
	restoreFailures  prometheus.Counter
	phaseDuration    *prometheus.HistogramVec
	ops              *prometheus.CounterVec
	errors           *prometheus.CounterVec
	virtualServers   prometheus.Gauge
	vips             prometheus.Gauge
	drainQueue       prometheus.Gauge
	drained          prometheus.Counter
	conntrackDeleted prometheus.Counter
	repairs          *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	// kube-proxy's buckets: 1 ms doubling, 15 of them.
	syncBuckets := prometheus.ExponentialBuckets(0.001, 2, 15)
	m := &Metrics{
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubeproxy", Name: "sync_proxy_rules_duration_seconds",
			Help: "Sync latency in seconds.", Buckets: syncBuckets,
		}),
		lastSync: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: "kubeproxy", Name: "sync_proxy_rules_last_timestamp_seconds",
			Help: "The last time a sync succeeded.",
		}),
		restoreFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "kubeproxy", Name: "sync_proxy_rules_iptables_restore_failures_total",
			Help: "Syncs whose netfilter rules or sets failed to apply.",
		}),
		phaseDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "ipvskit", Name: "sync_phase_duration_seconds",
			Help: "Time a sync spent in each phase.", Buckets: syncBuckets,
		}, []string{"phase"}),
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ipvskit", Name: "sync_operations_total",
			Help: "Kernel operations sent by syncs, by subsystem.",
		}, []string{"subsystem"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ipvskit", Name: "errors_total",
			Help: "Failed syncs, drains and reconciles, by the subsystem that failed.",
		}, []string{"subsystem"}),
		virtualServers: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "ipvskit", Name: "virtual_servers", Help: "Virtual servers the proxier holds.",
		}),
		vips: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "ipvskit", Name: "vips", Help: "Addresses bound on the VIP link.",
		}),
		drainQueue: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "ipvskit", Name: "drain_queue_length", Help: "Destinations draining (weight 0).",
		}),
		drained: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "ipvskit", Name: "drain_deleted_total", Help: "Draining destinations deleted.",
		}),
		conntrackDeleted: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "ipvskit", Name: "conntrack_deleted_entries_total", Help: "Stale conntrack entries deleted.",
		}),
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ipvskit", Name: "drift_repairs_total",
			Help: "Differences from the applied state found and repaired by Reconcile, by subsystem.",
		}, []string{"subsystem"}),
	}
	reg.MustRegister(m.syncDuration, m.lastSync, m.restoreFailures, m.phaseDuration, m.ops, m.errors,
		m.virtualServers, m.vips, m.drainQueue, m.drained, m.conntrackDeleted, m.repairs)
	return m
}

// Observe records one event.
func (m *Metrics) Observe(e proxier.Event) {
	switch e := e.(type) {
	case *proxier.SyncEvent:
		m.syncDuration.Observe(e.Duration.Seconds())
		for phase, d := range map[string]float64{
			"validate": e.Phases.Validate.Seconds(), "plan": e.Phases.Plan.Seconds(),
			"start": e.Phases.Start.Seconds(), "sets": e.Phases.Sets.Seconds(), "rules": e.Phases.Rules.Seconds(),
			"ipvs": e.Phases.IPVS.Seconds(), "addresses": e.Phases.Addresses.Seconds(),
			"conntrack": e.Phases.Conntrack.Seconds(),
		} {
			m.phaseDuration.WithLabelValues(phase).Observe(d)
		}
		for s, n := range e.Ops {
			m.ops.WithLabelValues(string(s)).Add(float64(n))
		}
		m.conntrackDeleted.Add(float64(e.Ops[proxier.SubsystemConntrack]))
		if e.Err != nil {
			m.errors.WithLabelValues(subsystemLabel(e.ErrSubsystem)).Inc()
			if e.ErrSubsystem == proxier.SubsystemRules || e.ErrSubsystem == proxier.SubsystemSets {
				m.restoreFailures.Inc()
			}
			return
		}
		m.lastSync.Set(float64(e.Start.Add(e.Duration).UnixNano()) / 1e9)
		m.virtualServers.Set(float64(e.VirtualServers))
		m.drainQueue.Set(float64(e.Draining))
		m.vips.Set(float64(e.VIPs))
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

// subsystemLabel is s, or "state" for a failure before the kernel was
// touched (an invalid State or a conflict).
func subsystemLabel(s proxier.Subsystem) string {
	if s == "" {
		return "state"
	}
	return string(s)
}
