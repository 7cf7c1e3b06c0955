// Package agent serves a Kubernetes cluster's Services on one node with
// ipvskit's Proxier: a drop-in for kube-proxy --proxy-mode=ipvs.
//
// An Agent watches Services, EndpointSlices and its own Node through
// client-go informers and converts them (package convert) to what the
// Proxier serves, with kube-proxy's rate limits: a change is applied at once
// unless the last sync was less than MinSyncPeriod ago (the changes of that
// time are applied together), and a sync runs at least every SyncPeriod
// even with nothing changed. Its cost follows the change: a sync converts
// only the Services whose objects or EndpointSlices changed, and those that
// contend with them for a VIP or a node port (convert.Converter), and hands
// the services that changed to Proxier.Update. Once every SyncPeriod the
// same changes go to Proxier.Sync with the whole State instead, which
// validates and compares all of it. The first sync, the one after a
// failure and one where the node changed (its addresses or the Node's zone)
// convert every object again and Sync that. Drain and Reconcile run on
// their own timers. Beside the rules it serves
// what kube-proxy serves: /healthz and /livez, the health-check node ports
// of Services with externalTrafficPolicy Local, and metrics under
// kube-proxy's names. Options.Listen (Kernel.Listen) opens those listeners
// in the node's namespace when the agent runs in another.
//
// Configuration is kube-proxy's own: a KubeProxyConfiguration file
// (LoadConfig), of which the fields that mean something for IPVS are applied
// and every other field that is set is reported by name as ignored; plus
// ipvskit's own choices (Options: back end, instance or kube-proxy's names,
// take-over).
//
// Per Service, the annotations ipvskit.io/scheduler and
// ipvskit.io/scheduler-flags choose its IPVS scheduler and the scheduler's
// flags (e.g. "mh" with "mh-fallback,mh-port"), which kube-proxy only has
// per node.
//
// Run returns when its context ends and leaves the node serving: a
// replacement agent (or kube-proxy, see docs/takeover.md) takes over without
// a blip. Proxier.Cleanup removes everything the agent's Proxier owns.
//
// Taking over a kube-proxy node (Options.Proxier.AdoptKubeProxy):
// PreviewTakeover, called instead of Run, is the dry run (ipvskit-proxy
// --adopt-kube-proxy --dry-run): it converts the cluster's Services and
// returns what the take-over would change of what kube-proxy programmed,
// changing nothing. Run previews the same way before its adopting sync, logs
// each change (a "take-over change" line with service, frontend, object and
// change) and sets the metric ipvskit_takeover_changes to their count.
package agent
