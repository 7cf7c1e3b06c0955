// Package metrics exports what a node agent and its Proxier do as
// Prometheus metrics, under kube-proxy's names where kube-proxy has a
// metric for the same thing, so that dashboards and alerts written for
// kube-proxy --proxy-mode=ipvs keep working, and under "ipvskit_" for the
// rest.
//
// A Metrics registers on the caller's prometheus.Registerer (never the
// global one). It is the Proxier's Observer, and the agent tells it the
// rest: the Service and EndpointSlice changes it sees, when it queues a
// sync, and the network programming latency of each EndpointSlice change
// a sync applied.
//
// # kube-proxy's metrics
//
// With the label sets and buckets of kube-proxy v1.37. ip_family is
// "IPv4" or "IPv6". kube-proxy runs one proxier per family while an
// ipvskit Proxier syncs all families at once, so a sync is recorded once
// for each family of Config.Families, which is what kube-proxy shows when
// both its proxiers sync.
//
//	kubeproxy_sync_proxy_rules_duration_seconds{ip_family}          histogram, every sync
//	kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family}    gauge, end of the last successful sync
//	kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{ip_family} gauge, Queued
//	kubeproxy_sync_proxy_rules_iptables_restore_failures_total{ip_family} counter, syncs whose netfilter rules or sets failed
//	kubeproxy_sync_proxy_rules_service_changes_total                counter, ServiceChanged
//	kubeproxy_sync_proxy_rules_service_changes_pending              gauge, Pending
//	kubeproxy_sync_proxy_rules_endpoint_changes_total               counter, EndpointsChanged
//	kubeproxy_sync_proxy_rules_endpoint_changes_pending             gauge, Pending
//	kubeproxy_network_programming_duration_seconds{ip_family}       histogram, NetworkProgramming
//	kubeproxy_proxy_healthz_total{code}                             counter, Probed
//	kubeproxy_proxy_livez_total{code}                               counter, Probed
//
// kube-proxy's IPVS mode has no sync_full_ or sync_partial_ duration
// histograms (those are the iptables and nftables modes'), and neither has
// this package.
//
// # ipvskit's metrics
//
//	ipvskit_sync_phase_duration_seconds{phase}     histogram, the phases of each sync that ran
//	ipvskit_sync_operations_total{subsystem}       counter, kernel operations sent by syncs
//	ipvskit_errors_total{subsystem}                counter, failed syncs by failing subsystem ("state" before the kernel), "drain", "reconcile"
//	ipvskit_virtual_servers, ipvskit_vips          gauges, after the last successful sync
//	ipvskit_drain_queue_length                     gauge, destinations draining
//	ipvskit_drain_deleted_total                    counter, draining destinations deleted
//	ipvskit_conntrack_deleted_entries_total        counter, stale conntrack entries deleted
//	ipvskit_drift_repairs_total{subsystem}         counter, drifts Reconcile repaired
//	ipvskit_takeover_changes                       gauge, changes a kube-proxy node's take-over makes (TakeoverChanges; absent unless one was previewed)
//
// # Example
//
//	reg := prometheus.NewRegistry()
//	m, err := metrics.New(reg, &metrics.Config{Families: families})
//	if err != nil {
//		return err
//	}
//	p, err := proxier.New(&proxier.Config{Families: families, Observer: m}, deps)
//
//	// In the informers' handlers, for every event:
//	m.ServiceChanged() // or m.EndpointsChanged()
//	m.Queued(time.Now())
//	m.Pending(pendingServices, pendingSlices)
//	// When a sync takes the pending changes:
//	m.Pending(0, 0)
//	// After a successful sync that applied an EndpointSlice change:
//	if t, ok := metrics.ParseTriggerTime(slice.Annotations[corev1.EndpointsLastChangeTriggerTime]); ok && t.After(started) {
//		m.NetworkProgramming(family, syncEnd.Sub(t))
//	}
package metrics
