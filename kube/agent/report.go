package agent

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ipvskit/ipvskit/kube/health"
	"github.com/ipvskit/ipvskit/kube/metrics"
	"github.com/ipvskit/ipvskit/proxier"
)

// reporters are what the agent serves beside the rules: /healthz and
// /livez, the health-check node ports, and metrics.
type reporters struct {
	a        *Agent
	health   *health.ProxyHealth
	services *health.ServiceHealth
	metrics  *metrics.Metrics
	registry *prometheus.Registry
	start    time.Time

	bound map[string]string // field -> the address listened on, for tests

	mu       sync.Mutex
	svcs     map[types.NamespacedName]bool // Services changed since the last sync
	epsCount int                           // EndpointSlice changes since the last sync
	triggers []trigger                     // their last-change-trigger-times
}

type trigger struct {
	family proxier.Family
	at     time.Time
}

func newReporters(a *Agent) (*reporters, error) {
	r := &reporters{a: a, start: a.clock.Now(), svcs: map[types.NamespacedName]bool{}, bound: map[string]string{}, registry: prometheus.NewRegistry()}
	var err error
	fams := a.o.Proxier.Families
	if r.metrics, err = metrics.New(r.registry, &metrics.Config{Families: fams}); err != nil {
		return nil, err
	}
	r.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.health = health.NewProxyHealth(&health.ProxyConfig{Timeout: 2 * a.o.Config.SyncPeriod, Families: fams,
		Now: a.clock.Now, Probed: r.metrics.Probed})
	return r, nil
}

// hooks are the agent's calls into the reporters.
func (r *reporters) hooks() hooks {
	return hooks{queued: r.queued, synced: r.synced, changed: r.changed, node: r.health.SyncNode}
}

func (r *reporters) queued() {
	r.health.QueuedUpdate()
	r.metrics.Queued(r.a.clock.Now())
}

func (r *reporters) changed(kind string, obj any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch kind {
	case kindService:
		r.metrics.ServiceChanged()
		if s, ok := obj.(*corev1.Service); ok {
			r.svcs[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = true
		}
	case kindSlice:
		r.metrics.EndpointsChanged()
		r.epsCount++
		if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
			if at, ok := metrics.ParseTriggerTime(s.Annotations[corev1.EndpointsLastChangeTriggerTime]); ok && !at.Before(r.start) {
				fam := proxier.IPv4
				if s.AddressType == discoveryv1.AddressTypeIPv6 {
					fam = proxier.IPv6
				}
				r.triggers = append(r.triggers, trigger{fam, at})
			}
		}
	}
	r.metrics.Pending(len(r.svcs), r.epsCount)
}

// synced reports a successful sync: health, the health-check ports with
// their local endpoint counts, and the changes it applied.
func (r *reporters) synced(hc healthChecks, _ *proxier.Result) {
	r.health.Updated()
	if r.services != nil {
		ports, counts := hc.byService()
		if err := r.services.SyncServices(ports); err != nil {
			r.a.log.Warn("health-check ports", "err", err)
		}
		r.services.SyncEndpoints(counts)
	}
	now := r.a.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.triggers {
		r.metrics.NetworkProgramming(t.family, now.Sub(t.at))
	}
	r.triggers = r.triggers[:0]
	clear(r.svcs)
	r.epsCount = 0
	r.metrics.Pending(0, 0)
}

// healthCheck is a served service's health-check port and its local ready
// endpoints.
type healthCheck struct{ port, local int }

// healthChecks are the health-check ports of the services served, by ID.
// Package convert puts a Service's port on the proxier.Service of its
// first port; its ID is "ns/name:port".
type healthChecks map[string]healthCheck

func healthChecksOf(svcs map[string]proxier.Service) healthChecks {
	hc := healthChecks{}
	for id, s := range svcs {
		hc.set(id, &s)
	}
	return hc
}

// set records the health-check port of the service id, s (nil: gone).
func (hc healthChecks) set(id string, s *proxier.Service) {
	if s == nil || s.HealthCheckNodePort == 0 {
		delete(hc, id)
		return
	}
	local := 0
	for _, e := range s.Endpoints {
		if e.Local && e.Ready {
			local++
		}
	}
	hc[id] = healthCheck{port: s.HealthCheckNodePort, local: local}
}

// byService are the ports and local endpoint counts by Service.
func (hc healthChecks) byService() (map[types.NamespacedName]int, map[types.NamespacedName]int) {
	ports, counts := map[types.NamespacedName]int{}, map[types.NamespacedName]int{}
	for id, h := range hc {
		key, _, _ := strings.Cut(id, ":")
		ns, name, _ := strings.Cut(key, "/")
		n := types.NamespacedName{Namespace: ns, Name: name}
		ports[n] = h.port
		counts[n] = h.local
	}
	return ports, counts
}

// serve starts the servers of the addresses configured; they stop with
// ctx. An address that cannot be listened on is an error.
func (r *reporters) serve(ctx context.Context, addrs []netip.Addr) error {
	c := r.a.o.Config
	r.services = health.NewServiceHealth(&health.ServiceConfig{Addrs: addrs, Proxy: r.health, Listen: r.a.o.Listen})
	go func() { <-ctx.Done(); r.services.Close() }()
	var errs []error
	if c.HealthzBindAddress != "" {
		errs = append(errs, r.listen(ctx, "healthzBindAddress", c.HealthzBindAddress, func(l net.Listener) error {
			return (&http.Server{Handler: r.health.Handler(), ReadHeaderTimeout: 10 * time.Second}).Serve(l)
		}))
	}
	if c.MetricsBindAddress != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(r.registry, promhttp.HandlerOpts{}))
		mux.HandleFunc("/proxyMode", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Write([]byte("ipvs"))
		})
		errs = append(errs, r.listen(ctx, "metricsBindAddress", c.MetricsBindAddress, func(l net.Listener) error {
			return (&http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}).Serve(l)
		}))
	}
	return errors.Join(errs...)
}

// listen listens on addr now (so that a port in use fails the start) and
// serves in the background until ctx ends.
func (r *reporters) listen(ctx context.Context, field, addr string, serve func(net.Listener) error) error {
	l, err := r.a.o.Listen("tcp", addr)
	if err != nil {
		return &ConfigError{Field: field, Value: addr, Err: err}
	}
	r.bound[field] = l.Addr().String()
	go func() { <-ctx.Done(); l.Close() }()
	go func() {
		if err := serve(l); err != nil && ctx.Err() == nil {
			r.a.log.Error("server stopped", "address", addr, "err", err)
		}
	}()
	return nil
}
