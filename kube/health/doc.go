// Package health serves what kube-proxy serves besides its rules: the
// proxy's own /healthz and /livez, and the per-service health-check node
// ports of Services with externalTrafficPolicy Local, with the same JSON,
// headers and status codes, so that load balancers and probes written for
// kube-proxy work unchanged.
//
// # The proxy's health
//
// A ProxyHealth is healthy unless an update has been queued (QueuedUpdate)
// for longer than its timeout without a successful sync since (Updated);
// kube-proxy's timeout is twice its sync period. /livez answers that alone;
// /healthz also answers 503 while the node is not eligible for traffic
// (SyncNode, NodeEligible): being deleted, or tainted by the cluster
// autoscaler for deletion.
//
// kube-proxy tracks health per IP family because it runs one proxier per
// family; an ipvskit Proxier syncs every family at once, so ProxyHealth
// tracks one proxier and reports it under each family of
// ProxyConfig.Families in the JSON "status".
//
// # Service health checks
//
// A ServiceHealth listens on each Service's healthCheckNodePort
// (SyncServices) and answers 200 while the Service has a local endpoint
// (SyncEndpoints) and the proxy is healthy, 503 otherwise.
//
// # Example
//
// A node agent's sync loop, with the Proxier, the change tracking and the
// node watch left out:
//
//	ph := health.NewProxyHealth(&health.ProxyConfig{Timeout: 2 * syncPeriod})
//	go ph.Serve(ctx, "0.0.0.0:10256")
//	sh := health.NewServiceHealth(&health.ServiceConfig{Proxy: ph})
//	defer sh.Close()
//
//	// On a Service or EndpointSlice change:
//	ph.QueuedUpdate()
//	// On a Node change:
//	ph.SyncNode(health.NodeEligible(node))
//	// After each sync:
//	if _, err := p.Sync(ctx, state); err == nil {
//		ph.Updated()
//	}
//	if err := sh.SyncServices(healthCheckPorts); err != nil {
//		log.Error("health-check ports", "error", err)
//	}
//	sh.SyncEndpoints(localEndpoints)
package health
