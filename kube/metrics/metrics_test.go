package metrics

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ipvskit/ipvskit/proxier"
)

func newMetrics(t *testing.T, cfg *Config) (*prometheus.Registry, *Metrics) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m, err := New(reg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return reg, m
}

// histogram is the sample count, sum and bucket upper bounds of the series
// of name whose labels are exactly labels.
type histogram struct {
	count  uint64
	sum    float64
	bounds []float64
}

func gatherHistogram(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) (histogram, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, s := range mf.GetMetric() {
			if len(s.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range s.GetLabel() {
				if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
					continue series
				}
			}
			h := histogram{count: s.GetHistogram().GetSampleCount(), sum: s.GetHistogram().GetSampleSum()}
			for _, b := range s.GetHistogram().GetBucket() {
				h.bounds = append(h.bounds, b.GetUpperBound())
			}
			return h, true
		}
	}
	return histogram{}, false
}

var start = time.Unix(1_800_000_000, 0)

func TestKubeProxyMetricsNamesLabelsAndValues(t *testing.T) {
	reg, m := newMetrics(t, &Config{Families: []proxier.Family{proxier.IPv6, proxier.IPv4}})

	m.Queued(start.Add(-500 * time.Millisecond))
	for range 3 {
		m.ServiceChanged()
	}
	m.EndpointsChanged()
	m.EndpointsChanged()
	m.Pending(1, 2)
	m.Observe(&proxier.SyncEvent{Start: start, Duration: 3 * time.Millisecond})
	m.Observe(&proxier.SyncEvent{Start: start.Add(time.Minute), Duration: time.Millisecond,
		Err: errors.New("boom"), ErrSubsystem: proxier.SubsystemSets})
	m.NetworkProgramming(proxier.IPv6, 1500*time.Millisecond)
	m.Probed("/healthz", 200)
	m.Probed("/healthz", 503)
	m.Probed("/healthz", 200)
	m.Probed("/livez", 200)
	m.Probed("/metrics", 200) // not a health path: ignored

	want := `
# HELP kubeproxy_sync_proxy_rules_last_timestamp_seconds When the last successful sync of the proxy rules ended, in seconds since the epoch.
# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge
kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} 1.800000000003e+09
kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv6"} 1.800000000003e+09
# HELP kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds When a sync of the proxy rules was last queued, in seconds since the epoch.
# TYPE kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds gauge
kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{ip_family="IPv4"} 1.7999999995e+09
kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{ip_family="IPv6"} 1.7999999995e+09
# HELP kubeproxy_sync_proxy_rules_iptables_restore_failures_total Syncs whose netfilter rules or sets failed to apply.
# TYPE kubeproxy_sync_proxy_rules_iptables_restore_failures_total counter
kubeproxy_sync_proxy_rules_iptables_restore_failures_total{ip_family="IPv4"} 1
kubeproxy_sync_proxy_rules_iptables_restore_failures_total{ip_family="IPv6"} 1
# HELP kubeproxy_sync_proxy_rules_service_changes_total Service events seen.
# TYPE kubeproxy_sync_proxy_rules_service_changes_total counter
kubeproxy_sync_proxy_rules_service_changes_total 3
# HELP kubeproxy_sync_proxy_rules_service_changes_pending Services with changes not yet synced.
# TYPE kubeproxy_sync_proxy_rules_service_changes_pending gauge
kubeproxy_sync_proxy_rules_service_changes_pending 1
# HELP kubeproxy_sync_proxy_rules_endpoint_changes_total EndpointSlice events seen.
# TYPE kubeproxy_sync_proxy_rules_endpoint_changes_total counter
kubeproxy_sync_proxy_rules_endpoint_changes_total 2
# HELP kubeproxy_sync_proxy_rules_endpoint_changes_pending EndpointSlice changes not yet synced.
# TYPE kubeproxy_sync_proxy_rules_endpoint_changes_pending gauge
kubeproxy_sync_proxy_rules_endpoint_changes_pending 2
# HELP kubeproxy_proxy_healthz_total Answers to /healthz, by HTTP status code.
# TYPE kubeproxy_proxy_healthz_total counter
kubeproxy_proxy_healthz_total{code="200"} 2
kubeproxy_proxy_healthz_total{code="503"} 1
# HELP kubeproxy_proxy_livez_total Answers to /livez, by HTTP status code.
# TYPE kubeproxy_proxy_livez_total counter
kubeproxy_proxy_livez_total{code="200"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"kubeproxy_sync_proxy_rules_last_timestamp_seconds", "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
		"kubeproxy_sync_proxy_rules_iptables_restore_failures_total",
		"kubeproxy_sync_proxy_rules_service_changes_total", "kubeproxy_sync_proxy_rules_service_changes_pending",
		"kubeproxy_sync_proxy_rules_endpoint_changes_total", "kubeproxy_sync_proxy_rules_endpoint_changes_pending",
		"kubeproxy_proxy_healthz_total", "kubeproxy_proxy_livez_total"); err != nil {
		t.Error(err)
	}

	// Every sync, failed or not, is timed in each family.
	for _, f := range []string{"IPv4", "IPv6"} {
		h, ok := gatherHistogram(t, reg, "kubeproxy_sync_proxy_rules_duration_seconds", map[string]string{"ip_family": f})
		if !ok || h.count != 2 || math.Abs(h.sum-0.004) > 1e-12 {
			t.Errorf("sync duration %s: %+v (found %v), want 2 samples summing to 0.004", f, h, ok)
		}
	}
	// Network programming is recorded in the slice's family only.
	if h, ok := gatherHistogram(t, reg, "kubeproxy_network_programming_duration_seconds", map[string]string{"ip_family": "IPv6"}); !ok || h.count != 1 || h.sum != 1.5 {
		t.Errorf("network programming IPv6: %+v (found %v), want 1 sample of 1.5", h, ok)
	}
	if _, ok := gatherHistogram(t, reg, "kubeproxy_network_programming_duration_seconds", map[string]string{"ip_family": "IPv4"}); ok {
		t.Error("network programming has an IPv4 series; only an IPv6 slice changed")
	}

	m.Pending(0, 0)
	if s, e := testutil.ToFloat64(m.servicesPending), testutil.ToFloat64(m.endpointsPending); s != 0 || e != 0 {
		t.Errorf("pending after Pending(0, 0): services %v, endpoints %v", s, e)
	}
}

func TestHistogramsHaveKubeProxysBuckets(t *testing.T) {
	reg, m := newMetrics(t, nil)
	m.Observe(&proxier.SyncEvent{Start: start, Duration: time.Millisecond})
	m.NetworkProgramming(proxier.IPv4, time.Second)

	// kube-proxy: ExponentialBuckets(0.001, 2, 15).
	sync := []float64{0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512,
		1.024, 2.048, 4.096, 8.192, 16.384}
	h, ok := gatherHistogram(t, reg, "kubeproxy_sync_proxy_rules_duration_seconds", map[string]string{"ip_family": "IPv4"})
	if !ok {
		t.Fatal("no IPv4 sync duration (default family)")
	}
	if diff := cmp.Diff(sync, h.bounds, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })); diff != "" {
		t.Errorf("sync duration buckets (-want +got):\n%s", diff)
	}

	// kube-proxy: 0.25s, 0.5s, then 1s to 59s by 1s, 60s to 115s by 5s,
	// 120s to 300s by 30s.
	prog := []float64{0.25, 0.5}
	for s := 1; s <= 59; s++ {
		prog = append(prog, float64(s))
	}
	for s := 60; s <= 115; s += 5 {
		prog = append(prog, float64(s))
	}
	for s := 120; s <= 300; s += 30 {
		prog = append(prog, float64(s))
	}
	h, ok = gatherHistogram(t, reg, "kubeproxy_network_programming_duration_seconds", map[string]string{"ip_family": "IPv4"})
	if !ok {
		t.Fatal("no IPv4 network programming")
	}
	if diff := cmp.Diff(prog, h.bounds); diff != "" {
		t.Errorf("network programming buckets (-want +got):\n%s", diff)
	}
}

// A failed sync leaves the last success's timestamp, and sets the holdings
// gauges to what it reports the kernel holds unless it is unsure.
func TestFailedSyncsKeepTheLastSuccess(t *testing.T) {
	reg, m := newMetrics(t, nil)
	m.Observe(&proxier.SyncEvent{Start: start, Duration: 2 * time.Second, VirtualServers: 3, VIPs: 2})
	// A validation failure (no subsystem) is no restore failure.
	m.Observe(&proxier.SyncEvent{Start: start.Add(time.Minute), Duration: time.Millisecond,
		Err: errors.New("invalid"), VirtualServers: 3, VIPs: 2})
	// Part of this one was applied: one more virtual server is held.
	m.Observe(&proxier.SyncEvent{Start: start.Add(2 * time.Minute), Duration: time.Millisecond,
		Err: errors.New("EPERM"), ErrSubsystem: proxier.SubsystemIPVS, VirtualServers: 4, VIPs: 2})
	// This one cannot tell: the gauges stay.
	m.Observe(&proxier.SyncEvent{Start: start.Add(3 * time.Minute), Duration: time.Millisecond,
		Err: errors.New("EPERM"), ErrSubsystem: proxier.SubsystemIPVS, Unsure: true})

	want := `
# HELP kubeproxy_sync_proxy_rules_last_timestamp_seconds When the last successful sync of the proxy rules ended, in seconds since the epoch.
# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge
kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} 1.800000002e+09
# HELP ipvskit_errors_total Failed syncs, by the subsystem that failed (state: before the kernel), and failed drains and reconciles.
# TYPE ipvskit_errors_total counter
ipvskit_errors_total{subsystem="ipvs"} 2
ipvskit_errors_total{subsystem="state"} 1
# HELP ipvskit_virtual_servers Virtual servers the proxier holds.
# TYPE ipvskit_virtual_servers gauge
ipvskit_virtual_servers 4
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
		"ipvskit_errors_total", "ipvskit_virtual_servers", "kubeproxy_sync_proxy_rules_iptables_restore_failures_total"); err != nil {
		t.Error(err)
	}
}

func TestIpvskitMetrics(t *testing.T) {
	reg, m := newMetrics(t, nil)
	m.Observe(&proxier.SyncEvent{Start: start, Duration: 3 * time.Millisecond,
		Phases:         proxier.Phases{Plan: time.Millisecond, IPVS: 2 * time.Millisecond},
		Ops:            map[proxier.Subsystem]int{proxier.SubsystemIPVS: 11, proxier.SubsystemAddresses: 1, proxier.SubsystemConntrack: 4},
		VirtualServers: 1, VIPs: 1, Draining: 5})
	m.Observe(&proxier.DrainEvent{Deleted: 2, Queue: 3})
	m.Observe(&proxier.DrainEvent{Err: errors.New("drain"), Queue: 3})
	m.Observe(&proxier.ReconcileEvent{Repairs: map[proxier.Subsystem]int{proxier.SubsystemIPVS: 2}, Err: errors.New("x")})

	want := `
# HELP ipvskit_sync_operations_total Kernel operations sent by syncs, by subsystem.
# TYPE ipvskit_sync_operations_total counter
ipvskit_sync_operations_total{subsystem="addresses"} 1
ipvskit_sync_operations_total{subsystem="conntrack"} 4
ipvskit_sync_operations_total{subsystem="ipvs"} 11
# HELP ipvskit_errors_total Failed syncs, by the subsystem that failed (state: before the kernel), and failed drains and reconciles.
# TYPE ipvskit_errors_total counter
ipvskit_errors_total{subsystem="drain"} 1
ipvskit_errors_total{subsystem="reconcile"} 1
# HELP ipvskit_drain_queue_length Destinations draining (weight 0).
# TYPE ipvskit_drain_queue_length gauge
ipvskit_drain_queue_length 3
# HELP ipvskit_drain_deleted_total Draining destinations deleted.
# TYPE ipvskit_drain_deleted_total counter
ipvskit_drain_deleted_total 2
# HELP ipvskit_conntrack_deleted_entries_total Stale conntrack entries deleted.
# TYPE ipvskit_conntrack_deleted_entries_total counter
ipvskit_conntrack_deleted_entries_total 4
# HELP ipvskit_drift_repairs_total Differences from the applied state found and repaired by Reconcile, by subsystem.
# TYPE ipvskit_drift_repairs_total counter
ipvskit_drift_repairs_total{subsystem="ipvs"} 2
# HELP ipvskit_virtual_servers Virtual servers the proxier holds.
# TYPE ipvskit_virtual_servers gauge
ipvskit_virtual_servers 1
# HELP ipvskit_vips Addresses bound on the VIP link.
# TYPE ipvskit_vips gauge
ipvskit_vips 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"ipvskit_sync_operations_total", "ipvskit_errors_total", "ipvskit_drain_queue_length", "ipvskit_drain_deleted_total",
		"ipvskit_conntrack_deleted_entries_total", "ipvskit_drift_repairs_total", "ipvskit_virtual_servers", "ipvskit_vips"); err != nil {
		t.Error(err)
	}
	// Only the phases that ran are timed.
	if n := testutil.CollectAndCount(m.phaseDuration); n != 2 {
		t.Errorf("phase duration series: %d, want 2 (plan, ipvs)", n)
	}
	if h, ok := gatherHistogram(t, reg, "ipvskit_sync_phase_duration_seconds", map[string]string{"phase": "ipvs"}); !ok || h.count != 1 || h.sum != 0.002 {
		t.Errorf("ipvs phase: %+v (found %v), want 1 sample of 0.002", h, ok)
	}
}

func TestNewRollsBackOnAConflict(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	// The last metric New registers, registered already. (Same help and
	// labels: a registry remembers the label names of a name it has seen.)
	blocker := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ipvskit_drift_repairs_total",
		Help: "Differences from the applied state found and repaired by Reconcile, by subsystem."}, []string{"subsystem"})
	blocker.WithLabelValues("ipvs").Inc()
	reg.MustRegister(blocker)
	var are prometheus.AlreadyRegisteredError
	if _, err := New(reg, nil); !errors.As(err, &are) {
		t.Fatalf("New over an existing ipvskit_drift_repairs_total: %v, want AlreadyRegisteredError", err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 1 {
		t.Errorf("registry after a failed New: %d metrics (%v), want only the blocker", n, err)
	}
	reg.Unregister(blocker)
	if _, err := New(reg, nil); err != nil {
		t.Errorf("New after the conflict is gone: %v", err)
	}
	if _, err := New(nil, nil); err == nil {
		t.Error("New(nil, nil) succeeded")
	}
}

func TestParseTriggerTime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2018-10-22T19:32:52.1Z", time.Date(2018, 10, 22, 19, 32, 52, 100_000_000, time.UTC), true},
		{"2018-10-22T19:32:52Z", time.Date(2018, 10, 22, 19, 32, 52, 0, time.UTC), true},
		{"2018-10-22T21:32:52.000000001+02:00", time.Date(2018, 10, 22, 19, 32, 52, 1, time.UTC), true},
		{"", time.Time{}, false},
		{"2018-10-22 19:32:52", time.Time{}, false},
		{"yesterday", time.Time{}, false},
	} {
		got, ok := ParseTriggerTime(tc.in)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("ParseTriggerTime(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// ipvskit_takeover_changes is absent until the agent previews a take-over,
// so a node never taken over does not read as a blip-free take-over.
func TestTakeoverChangesIsAbsentUntilSet(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := New(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "ipvskit_takeover_changes"); err != nil || n != 0 {
		t.Errorf("before TakeoverChanges: %d series (%v), want none", n, err)
	}
	m.TakeoverChanges(2)
	want := `
# HELP ipvskit_takeover_changes Changes the take-over of a kube-proxy node makes to what kube-proxy programmed, as previewed before the adopting sync (0: no blip).
# TYPE ipvskit_takeover_changes gauge
ipvskit_takeover_changes 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ipvskit_takeover_changes"); err != nil {
		t.Error(err)
	}
}
