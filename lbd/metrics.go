package lbd

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ipvskit/ipvskit/proxier"
)

// Metrics are the daemon's Prometheus metrics (README.md lists them).
// A nil *Metrics records nothing.
type Metrics struct {
	up       *prometheus.GaugeVec
	check    *prometheus.HistogramVec
	sorry    *prometheus.GaugeVec
	requests prometheus.Counter
	reloads  *prometheus.CounterVec
}

// NewMetrics makes the daemon's metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		up: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ipvskit_lb_real_server_up",
			Help: "Whether the real server's health check says up (1) or down (0).",
		}, []string{"virtual_server", "real_server"}),
		check: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ipvskit_lb_check_duration_seconds",
			Help:    "How long each health check took, by virtual server and result.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"virtual_server", "result"}),
		sorry: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ipvskit_lb_sorry_server_active",
			Help: "Whether the virtual server is on its sorry server (no real server up).",
		}, []string{"virtual_server"}),
		requests: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ipvskit_lb_ipvs_requests_total",
			Help: "IPVS requests the daemon's syncs and updates sent.",
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ipvskit_lb_reloads_total",
			Help: "Configuration reloads, by result (success, refused, failed).",
		}, []string{"result"}),
	}
	for _, c := range []prometheus.Collector{m.up, m.check, m.sorry, m.requests, m.reloads} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Reloaded counts a reload by its result: "success", "refused" (a bad
// file, the running configuration kept) or "failed".
func (m *Metrics) Reloaded(result string) {
	if m != nil {
		m.reloads.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) observe(k Key, latency time.Duration, err error) {
	if m == nil {
		return
	}
	result := "success"
	if err != nil {
		result = "failure"
	}
	m.check.WithLabelValues(k.VirtualServer, result).Observe(latency.Seconds())
}

func (m *Metrics) health(k Key, up bool) {
	if m == nil {
		return
	}
	v := 0.0
	if up {
		v = 1
	}
	m.up.WithLabelValues(k.VirtualServer, k.Addr.String()).Set(v)
}

// targets sets every real server's up gauge as down says.
func (m *Metrics) targets(cfg *Config, down map[Key]bool) {
	if m == nil {
		return
	}
	for name, vs := range cfg.VirtualServers {
		for _, rs := range vs.RealServers {
			k := vs.key(name, rs)
			m.health(k, !down[k])
		}
	}
}

// forget drops the series of the virtual servers and real servers old
// had and cfg has not.
func (m *Metrics) forget(old, cfg *Config) {
	if m == nil {
		return
	}
	for name, vs := range old.VirtualServers {
		nvs := cfg.VirtualServers[name]
		if nvs == nil {
			m.up.DeletePartialMatch(prometheus.Labels{"virtual_server": name})
			m.check.DeletePartialMatch(prometheus.Labels{"virtual_server": name})
			m.sorry.DeleteLabelValues(name)
			continue
		}
		for _, rs := range vs.RealServers {
			if k := vs.key(name, rs); !nvs.has(k) {
				m.up.DeleteLabelValues(name, k.Addr.String())
			}
		}
	}
}

func (m *Metrics) sorryServer(name string, on bool) {
	if m == nil {
		return
	}
	v := 0.0
	if on {
		v = 1
	}
	m.sorry.WithLabelValues(name).Set(v)
}

func (m *Metrics) sent(res *proxier.Result) {
	if m != nil {
		m.requests.Add(float64(requests(res)))
	}
}
