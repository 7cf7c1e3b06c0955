// Package convert maps Kubernetes Services and EndpointSlices, with the facts
// of one node, onto a proxier.State: the virtual servers and endpoints that
// kube-proxy's IPVS mode would program on that node.
//
// Convert is a pure function of its Input. Converter is its incremental
// form, for a caller that learns of changes one object at a time: it keeps
// the objects, converts again only the Services that changed (with their
// slices) and the Services that contend with them for a frontend, and
// returns the services of the State that changed; its State and Skipped
// equal Convert's of the same objects. Its State passes
// State.Validate(&proxier.Config{Families: in.Node.Families}) for any input;
// whatever Convert had to leave out to get there, and whatever the input asked
// for that kube-proxy ignores, it reports as a Skipped entry. Decode reads
// the objects as `kubectl get svc,endpointslices -o yaml` (or -o json) writes
// them.
//
// # The mapping
//
// kube-proxy proxies per service port, so Convert makes one proxier.Service
// for each port of each Service, with exactly one Port. Its ID is
// "namespace/name:port", or "namespace/name" for an unnamed port. Its
// endpoints are those of the EndpointSlices labelled
// kubernetes.io/service-name with the Service's name, in its namespace, that
// list a port of the same name and protocol; Endpoint.Ports maps the port's
// name to the slice's port number and Port.TargetPort is 0.
//
// kube-proxy runs one proxier per IP family (Node.Families). A Service is
// proxied in a family only if it has a cluster IP of that family, found as
// kube-proxy finds it: spec.clusterIPs at the index of the family in
// spec.ipFamilies, or spec.clusterIP when spec.ipFamilies is empty. In a
// family where it is not proxied, none of its external IPs, load-balancer IPs
// or endpoints are used. Headless Services (clusterIP None), Services without
// a cluster IP and ExternalName Services are not proxied at all.
//
//   - ClusterIPs: the cluster IP of each family the Service is proxied in.
//   - IPFamilies: those families (spec.ipFamilies, as far as the Service has
//     a cluster IP of each and Node.Families has it), so that its node ports
//     and health-check port are served in them only.
//   - ExternalIPs: spec.externalIPs of those families.
//   - LoadBalancerIPs: status.loadBalancer.ingress[].ip of those families for
//     type LoadBalancer, except ingresses whose ipMode is not VIP (Proxy): the
//     load balancer delivers their traffic to the node, not to the IP.
//   - LoadBalancerSourceRanges: spec.loadBalancerSourceRanges, trimmed of
//     spaces, host bits cleared; an invalid range is ignored (kube-proxy logs
//     and ignores it), and a zero-length range (0.0.0.0/0, ::/0) means "any
//     source" for its family, as if that family had no ranges. Where one
//     family is restricted and another is not, the unrestricted family is
//     written as its two halves (0.0.0.0/1 and 128.0.0.0/1, or ::/1 and
//     8000::/1), because a proxier.Service has one list for both families and
//     a list without a family's ranges would drop that family's clients.
//   - Port: spec.ports[]; NodePort for types NodePort and LoadBalancer.
//   - ExternalTrafficPolicy Local where kube-proxy applies it: for types
//     NodePort and LoadBalancer, and for type ClusterIP with external IPs.
//     InternalTrafficPolicy Local for internalTrafficPolicy Local.
//   - HealthCheckNodePort, for type LoadBalancer with external traffic policy
//     Local, on the proxier.Service of the Service's first port only
//     (ipvskit serves a health-check port once); set on any other Service
//     (which the API server refuses), it is left out and reported.
//   - SessionAffinity for ClientIP, with timeoutSeconds (10800 when unset).
//   - Scheduler is left empty: it is the caller's configuration.
//
// Unset fields are read as the API server defaults them: an empty type is
// ClusterIP, an empty protocol (service or slice port) is TCP.
//
// Endpoints: the first address of each endpoint (kube-proxy uses only
// addresses[0]), from slices of the family's addressType (FQDN slices are
// ignored). Conditions as kube-proxy reads them: ready unset is true,
// serving unset is true, terminating unset is false. Local is nodeName equal
// to Node.Name. An endpoint address and port listed by several slices is kept
// once: slices are read in name order, and a later non-terminating copy
// replaces an earlier one while a terminating copy never replaces one
// (kube-proxy's rule, in its map order; Convert fixes the order), so the
// State never has two endpoints that would be one destination, which
// validation refuses. The same address with different ports is two
// endpoints. Kubernetes has no weights: every endpoint has the default
// weight (Endpoint.Weight 0, which is 1), no quiesce and no thresholds.
//
// Topology: where kube-proxy would narrow a port's cluster-policy endpoints
// by hints (every ready endpoint of the family has node hints and one names
// Node.Name, else every ready endpoint has zone hints and one names
// Node.Zone), Convert drops the ready endpoints not hinted for this node or
// zone. proxier.State has no hints, so this narrows the endpoints for
// local-policy VIPs of the same port too; when that would remove a local
// ready endpoint that a local-policy VIP uses, Convert keeps it (the
// cluster-policy VIPs then have it too) and reports the difference.
//
// Conflicts: the API server keeps VIPs and node ports unique, but Convert
// does not rely on it (nor does Converter: when the first of two Services
// claiming a frontend goes, the second gets it). It reads Services in ID order, and a frontend (VIP,
// port and protocol; node port and protocol; health-check port) that an
// earlier ID already has is left out of the later one and reported. A VIP
// that is not usable (loopback, link-local, multicast, unspecified), and a
// cluster IP that equals a node address, are left out and reported. An
// external or load-balancer IP that is a node address (one of
// Node.Addresses) is kept: the proxier serves it by its virtual servers
// alone, without binding it, as kube-proxy does (proxier.Node.Addresses).
// On such an address a frontend and a node port or health-check port at the
// same port would be one virtual server, so the later ID's is left out and
// reported. A proxier.Service left with no VIP, node port or health-check
// port is dropped.
//
// # Known differences from kube-proxy
//
// The conformance test (package conformance) measures them against
// kube-proxy's real proxier; docs/kube-proxy-differences.md lists each with
// its reason.
//
//   - kube-proxy's IPVS mode gives an external-policy-Local VIP the cluster
//     endpoints when the node has no local one (kubernetes#97081), and an
//     internal-policy-Local cluster IP too when its port is externally
//     accessible (a node port, an external or load-balancer IP); ipvskit's
//     proxier gives them no destinations, as Kubernetes' API documents the
//     policies. Convert passes both policies through unchanged.
//   - The load-balancer source-range rule admits the node's own traffic when a
//     range holds any of Node.Addresses; kube-proxy tests its primary node IP.
//   - Node.NodePortCIDRs are per family in kube-proxy: a family with no CIDR
//     in the list serves node ports on all its addresses. Convert writes such
//     a family's zero prefix into State.Node.NodePortCIDRs to keep that.
package convert
