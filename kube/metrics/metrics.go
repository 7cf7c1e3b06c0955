package metrics

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ipvskit/ipvskit/proxier"
)

// Config configures Metrics. The zero value is usable.
type Config struct {
	// Families are the IP families the Proxier serves, the values of
	// kube-proxy's ip_family label under which each sync is recorded;
	// empty means IPv4 only. Pass the same list as proxier.Config.Families.
	Families []proxier.Family
}

// Metrics is a proxier.Observer that exports what the Proxier does, with
// methods for what the agent around it does. Its methods are safe for
// concurrent use.
type Metrics struct {
	families []string

	// kube-proxy's
	syncDuration     *prometheus.HistogramVec
	lastSync         *prometheus.GaugeVec
	lastQueued       *prometheus.GaugeVec
	restoreFailures  *prometheus.CounterVec
	serviceChanges   prometheus.Counter
	servicesPending  prometheus.Gauge
	endpointChanges  prometheus.Counter
	endpointsPending prometheus.Gauge
	netProgramming   *prometheus.HistogramVec
	healthz, livez   *prometheus.CounterVec

	// ipvskit's
	phaseDuration    *prometheus.HistogramVec
	ops              *prometheus.CounterVec
	errors           *prometheus.CounterVec
	virtualServers   prometheus.Gauge
	vips             prometheus.Gauge
	drainQueue       prometheus.Gauge
	drained          prometheus.Counter
	conntrackDeleted prometheus.Counter
	repairs          *prometheus.CounterVec
	takeoverChanges  *prometheus.GaugeVec
}

// syncBuckets are kube-proxy's for sync durations: 1ms doubling up to
// about 16s.
var syncBuckets = prometheus.ExponentialBuckets(0.001, 2, 15)

// programmingBuckets are kube-proxy's for network programming latency:
// 0.25s and 0.5s, every second to 59s, every 5s to 115s, every 30s to 5min.
var programmingBuckets = slices.Concat(
	prometheus.LinearBuckets(0.25, 0.25, 2),
	prometheus.LinearBuckets(1, 1, 59),
	prometheus.LinearBuckets(60, 5, 12),
	prometheus.LinearBuckets(120, 30, 7),
)

// New creates the metrics and registers them on reg. If one cannot be
// registered (reg already has a metric of that name), New unregisters
// those it registered and returns the error. A nil cfg means the defaults.
func New(reg prometheus.Registerer, cfg *Config) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("metrics: nil Registerer")
	}
	if cfg == nil {
		cfg = &Config{}
	}
	m := &Metrics{families: families(cfg.Families)}
	const kp = "kubeproxy"
	family := []string{"ip_family"}
	m.syncDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: kp, Name: "sync_proxy_rules_duration_seconds",
		Help: "Duration of syncs of the proxy rules, successful or not.", Buckets: syncBuckets,
	}, family)
	m.lastSync = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: kp, Name: "sync_proxy_rules_last_timestamp_seconds",
		Help: "When the last successful sync of the proxy rules ended, in seconds since the epoch.",
	}, family)
	m.lastQueued = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: kp, Name: "sync_proxy_rules_last_queued_timestamp_seconds",
		Help: "When a sync of the proxy rules was last queued, in seconds since the epoch.",
	}, family)
	m.restoreFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: kp, Name: "sync_proxy_rules_iptables_restore_failures_total",
		Help: "Syncs whose netfilter rules or sets failed to apply.",
	}, family)
	m.serviceChanges = prometheus.NewCounter(prometheus.CounterOpts{
		Subsystem: kp, Name: "sync_proxy_rules_service_changes_total",
		Help: "Service events seen.",
	})
	m.servicesPending = prometheus.NewGauge(prometheus.GaugeOpts{
		Subsystem: kp, Name: "sync_proxy_rules_service_changes_pending",
		Help: "Services with changes not yet synced.",
	})
	m.endpointChanges = prometheus.NewCounter(prometheus.CounterOpts{
		Subsystem: kp, Name: "sync_proxy_rules_endpoint_changes_total",
		Help: "EndpointSlice events seen.",
	})
	m.endpointsPending = prometheus.NewGauge(prometheus.GaugeOpts{
		Subsystem: kp, Name: "sync_proxy_rules_endpoint_changes_pending",
		Help: "EndpointSlice changes not yet synced.",
	})
	m.netProgramming = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: kp, Name: "network_programming_duration_seconds",
		Help:    "Time from a change of a Service's endpoints to the end of the sync that applied it.",
		Buckets: programmingBuckets,
	}, family)
	m.healthz = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: kp, Name: "proxy_healthz_total", Help: "Answers to /healthz, by HTTP status code.",
	}, []string{"code"})
	m.livez = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: kp, Name: "proxy_livez_total", Help: "Answers to /livez, by HTTP status code.",
	}, []string{"code"})

	const ik = "ipvskit"
	m.phaseDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: ik, Name: "sync_phase_duration_seconds",
		Help: "Time a sync spent in each phase that ran.", Buckets: syncBuckets,
	}, []string{"phase"})
	m.ops = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ik, Name: "sync_operations_total",
		Help: "Kernel operations sent by syncs, by subsystem.",
	}, []string{"subsystem"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ik, Name: "errors_total",
		Help: "Failed syncs, by the subsystem that failed (state: before the kernel), and failed drains and reconciles.",
	}, []string{"subsystem"})
	m.virtualServers = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: ik, Name: "virtual_servers", Help: "Virtual servers the proxier holds.",
	})
	m.vips = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: ik, Name: "vips", Help: "Addresses bound on the VIP link.",
	})
	m.drainQueue = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: ik, Name: "drain_queue_length", Help: "Destinations draining (weight 0).",
	})
	m.drained = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: ik, Name: "drain_deleted_total", Help: "Draining destinations deleted.",
	})
	m.conntrackDeleted = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: ik, Name: "conntrack_deleted_entries_total", Help: "Stale conntrack entries deleted.",
	})
	m.repairs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ik, Name: "drift_repairs_total",
		Help: "Differences from the applied state found and repaired by Reconcile, by subsystem.",
	}, []string{"subsystem"})
	// No labels: absent until TakeoverChanges sets it, so a node that was
	// never taken over does not read as one taken over without a blip.
	m.takeoverChanges = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ik, Name: "takeover_changes",
		Help: "Changes the take-over of a kube-proxy node makes to what kube-proxy programmed, as previewed before the adopting sync (0: no blip).",
	}, nil)

	cs := []prometheus.Collector{m.syncDuration, m.lastSync, m.lastQueued, m.restoreFailures,
		m.serviceChanges, m.servicesPending, m.endpointChanges, m.endpointsPending, m.netProgramming,
		m.healthz, m.livez,
		m.phaseDuration, m.ops, m.errors, m.virtualServers, m.vips, m.drainQueue, m.drained,
		m.conntrackDeleted, m.takeoverChanges, m.repairs}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, c := range cs[:i] {
				reg.Unregister(c)
			}
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	return m, nil
}

// families are the label values of fams, IPv4 first; empty means IPv4.
func families(fams []proxier.Family) []string {
	var out []string
	for _, f := range []proxier.Family{proxier.IPv4, proxier.IPv6} {
		if slices.Contains(fams, f) {
			out = append(out, f.String())
		}
	}
	if len(out) == 0 {
		out = []string{proxier.IPv4.String()}
	}
	return out
}

// ServiceChanged counts one Service event from the API server, whether or
// not it changed anything the proxier serves (as kube-proxy counts them).
func (m *Metrics) ServiceChanged() { m.serviceChanges.Inc() }

// EndpointsChanged counts one EndpointSlice event from the API server,
// whether or not it changed anything the proxier serves.
func (m *Metrics) EndpointsChanged() { m.endpointChanges.Inc() }

// Pending sets the changes waiting for a sync: services, the number of
// Services with changes (kube-proxy counts each Service once), and
// endpoints, the number of EndpointSlice changes that need a sync
// (kube-proxy counts each change). Call it as changes arrive, and with
// zeros when a sync takes them.
func (m *Metrics) Pending(services, endpoints int) {
	m.servicesPending.Set(float64(services))
	m.endpointsPending.Set(float64(endpoints))
}

// Queued records that a sync was requested at the given time, in each
// family.
func (m *Metrics) Queued(at time.Time) {
	for _, f := range m.families {
		m.lastQueued.WithLabelValues(f).Set(seconds(at))
	}
}

// NetworkProgramming records the network programming latency of one
// EndpointSlice change applied by a sync: d, from the slice's
// last-change-trigger-time (ParseTriggerTime) to the end of the sync.
// family is the slice's address type. As kube-proxy does, leave out
// deleted slices and trigger times from before the agent started (those
// measure how long the agent was not running). The trigger time is set by
// the control plane's clock, so a skewed clock skews d.
func (m *Metrics) NetworkProgramming(family proxier.Family, d time.Duration) {
	m.netProgramming.WithLabelValues(family.String()).Observe(d.Seconds())
}

// ParseTriggerTime parses the value of an EndpointSlice's
// endpoints.kubernetes.io/last-change-trigger-time annotation
// (corev1.EndpointsLastChangeTriggerTime), an RFC 3339 time with optional
// fractional seconds. It reports false for an empty or malformed value,
// which kube-proxy ignores.
func ParseTriggerTime(value string) (time.Time, bool) {
	if value == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, value)
	return t, err == nil
}

// TakeoverChanges records the number of changes the take-over of a
// kube-proxy node makes (len of proxier.TakeoverPreview.Changes, taken
// before the adopting sync); 0 is a take-over without a blip.
func (m *Metrics) TakeoverChanges(n int) {
	m.takeoverChanges.WithLabelValues().Set(float64(n))
}

// Probed counts one answer of the proxy health server: path is "/healthz"
// or "/livez" (other paths are ignored) and code the HTTP status. Its type
// fits health.ProxyConfig.Probed.
func (m *Metrics) Probed(path string, code int) {
	switch path {
	case "/healthz":
		m.healthz.WithLabelValues(strconv.Itoa(code)).Inc()
	case "/livez":
		m.livez.WithLabelValues(strconv.Itoa(code)).Inc()
	}
}

func seconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
