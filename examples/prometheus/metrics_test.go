package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ipvskit/ipvskit/proxier"
)

func TestMetricsUseKubeProxyNamesAndCountWhatTheProxierDid(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	start := time.Unix(1_800_000_000, 0)
	m.Observe(&proxier.SyncEvent{Start: start, Duration: 3 * time.Millisecond,
		Phases:         proxier.Phases{IPVS: 2 * time.Millisecond},
		Ops:            map[proxier.Subsystem]int{proxier.SubsystemIPVS: 11, proxier.SubsystemAddresses: 1, proxier.SubsystemConntrack: 4},
		VirtualServers: 1, VIPs: 1})
	m.Observe(&proxier.SyncEvent{Start: start.Add(time.Minute), Duration: time.Millisecond,
		Err: errors.New("boom"), ErrSubsystem: proxier.SubsystemRules})
	m.Observe(&proxier.DrainEvent{Deleted: 2, Queue: 3})
	m.Observe(&proxier.ReconcileEvent{Repairs: map[proxier.Subsystem]int{proxier.SubsystemIPVS: 2}})

	if n := testutil.CollectAndCount(reg, "kubeproxy_sync_proxy_rules_duration_seconds"); n != 1 {
		t.Errorf("sync duration histogram: %d series", n)
	}
	want := `
# HELP kubeproxy_sync_proxy_rules_last_timestamp_seconds The last time a sync succeeded.
# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge
kubeproxy_sync_proxy_rules_last_timestamp_seconds 1.800000000003e+09
# HELP kubeproxy_sync_proxy_rules_iptables_restore_failures_total Syncs whose netfilter rules or sets failed to apply.
# TYPE kubeproxy_sync_proxy_rules_iptables_restore_failures_total counter
kubeproxy_sync_proxy_rules_iptables_restore_failures_total 1
# HELP ipvskit_sync_operations_total Kernel operations sent by syncs, by subsystem.
# TYPE ipvskit_sync_operations_total counter
ipvskit_sync_operations_total{subsystem="addresses"} 1
ipvskit_sync_operations_total{subsystem="conntrack"} 4
ipvskit_sync_operations_total{subsystem="ipvs"} 11
# HELP ipvskit_errors_total Failed syncs, drains and reconciles, by the subsystem that failed.
# TYPE ipvskit_errors_total counter
ipvskit_errors_total{subsystem="rules"} 1
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
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"kubeproxy_sync_proxy_rules_last_timestamp_seconds", "kubeproxy_sync_proxy_rules_iptables_restore_failures_total",
		"ipvskit_sync_operations_total", "ipvskit_errors_total", "ipvskit_drain_queue_length", "ipvskit_drain_deleted_total",
		"ipvskit_conntrack_deleted_entries_total", "ipvskit_drift_repairs_total", "ipvskit_virtual_servers"); err != nil {
		t.Error(err)
	}
}
