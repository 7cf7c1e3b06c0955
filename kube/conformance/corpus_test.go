package conformance

import (
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// step is the whole state of one case at one point in time.
type step struct {
	services []*v1.Service
	slices   []*discovery.EndpointSlice
}

func st(objs ...any) step {
	var s step
	for _, o := range objs {
		switch o := o.(type) {
		case *v1.Service:
			s.services = append(s.services, o)
		case *discovery.EndpointSlice:
			s.slices = append(s.slices, o)
		default:
			panic("corpus: not a Service or EndpointSlice")
		}
	}
	return s
}

// qualified is a copy of s with every object renamed "<prefix>-<name>",
// and each slice's service label with it.
func (s step) qualified(prefix string) step {
	var out step
	for _, o := range s.services {
		o = o.DeepCopy()
		o.Name = prefix + "-" + o.Name
		out.services = append(out.services, o)
	}
	for _, o := range s.slices {
		o = o.DeepCopy()
		o.Name = prefix + "-" + o.Name
		o.Labels[discovery.LabelServiceName] = prefix + "-" + o.Labels[discovery.LabelServiceName]
		out.slices = append(out.slices, o)
	}
	return out
}

// tcase is one case of the corpus: its steps (one for a static case), made
// from the case's own addresses.
type tcase struct {
	name  string
	steps func(a alloc) []step
}

// One port each way; the backends serve TCP 8080 and 8081, UDP 5353 and
// 5354 (see topology), so target ports are those.
var (
	httpP = sport{"http", v1.ProtocolTCP, 8080}
	altP  = sport{"alt", v1.ProtocolTCP, 8081}
	dnsP  = sport{"dns", v1.ProtocolUDP, 5353}
	sctpP = sport{"sctp", v1.ProtocolSCTP, 9999}
)

func http(s *v1.Service) { port("http", v1.ProtocolTCP, 80, 8080)(s) }

// one is a static case: a Service named "s" and its IPv4 slice.
func one(name string, ports []sport, eps []ep, opts ...func(*v1.Service)) tcase {
	return tcase{name, func(a alloc) []step {
		return []step{st(a.svc("s", opts...), slice("s", "a", false, ports, eps...))}
	}}
}

func two() []ep { return []ep{ready(1, ""), ready(2, "")} }

// corpus is every case. A case names its objects freely ("s", "s-a"); the
// runner prefixes them with the case's name, so cases never collide.
var corpus = []tcase{
	one("clusterip-tcp", []sport{httpP}, two(), http),
	one("clusterip-udp", []sport{dnsP}, two(), port("dns", v1.ProtocolUDP, 53, 5353)),
	one("clusterip-sctp", []sport{sctpP}, two(), port("sctp", v1.ProtocolSCTP, 9, 9999)),
	one("clusterip-no-endpoints", []sport{httpP}, nil, http),
	one("clusterip-multi-port", []sport{httpP, altP}, two(), http, port("alt", v1.ProtocolTCP, 81, 8081)),
	one("clusterip-tcp-and-udp-same-port", []sport{{"dns-tcp", v1.ProtocolTCP, 8080}, dnsP}, two(),
		port("dns-tcp", v1.ProtocolTCP, 53, 8080), port("dns", v1.ProtocolUDP, 53, 5353)),
	one("endpoint-port-differs-from-target", []sport{{"http", v1.ProtocolTCP, 8081}}, two(), http),
	one("unnamed-port", []sport{{"", v1.ProtocolTCP, 8080}}, two(), port("", v1.ProtocolTCP, 80, 8080)),
	one("four-endpoints", []sport{httpP}, []ep{ready(1, ""), ready(2, ""), ready(3, ""), ready(4, "")}, http),
	one("ready-unset-means-ready", []sport{httpP}, []ep{{b: 1}, {b: 2, ready: ptr(false)}}, http),
	one("not-ready-left-out", []sport{httpP}, []ep{ready(1, ""), {b: 2, ready: ptr(false), serving: ptr(false)}}, http),
	one("terminating-fallback", []sport{httpP}, []ep{
		{b: 1, ready: ptr(false), serving: ptr(true), terminating: ptr(true)},
		{b: 2, ready: ptr(false), serving: ptr(true), terminating: ptr(true)},
	}, http),
	one("terminating-beside-ready", []sport{httpP}, []ep{
		ready(1, ""), {b: 2, ready: ptr(false), serving: ptr(true), terminating: ptr(true)},
	}, http),
	one("terminating-not-serving", []sport{httpP}, []ep{
		{b: 1, ready: ptr(false), serving: ptr(false), terminating: ptr(true)},
	}, http),
	{"nodeport-tcp", func(a alloc) []step {
		return []step{st(a.svc("s", http, a.typ(v1.ServiceTypeNodePort)), slice("s", "a", false, []sport{httpP}, two()...))}
	}},
	{"nodeport-udp", func(a alloc) []step {
		return []step{st(a.svc("s", port("dns", v1.ProtocolUDP, 53, 5353), a.typ(v1.ServiceTypeNodePort)),
			slice("s", "a", false, []sport{dnsP}, two()...))}
	}},
	{"nodeport-sctp", func(a alloc) []step {
		return []step{st(a.svc("s", port("sctp", v1.ProtocolSCTP, 9, 9999), a.typ(v1.ServiceTypeNodePort)),
			slice("s", "a", false, []sport{sctpP}, two()...))}
	}},
	{"nodeport-etp-local-with-local-endpoint", func(a alloc) []step {
		return []step{st(a.svc("s", http, a.typ(v1.ServiceTypeNodePort), eTPLocal(0)),
			slice("s", "a", false, []sport{httpP}, ready(1, nodeName), ready(2, "")))}
	}},
	{"nodeport-etp-local-without-local-endpoint", func(a alloc) []step {
		return []step{st(a.svc("s", http, a.typ(v1.ServiceTypeNodePort), eTPLocal(0)),
			slice("s", "a", false, []sport{httpP}, two()...))}
	}},
	{"nodeport-etp-local-endpoint-without-node", func(a alloc) []step {
		return []step{st(a.svc("s", http, a.typ(v1.ServiceTypeNodePort), eTPLocal(0)),
			slice("s", "a", false, []sport{httpP}, ep{b: 1, ready: ptr(true), noNode: true}, ready(2, nodeName)))}
	}},
	one("itp-local-with-local-endpoint", []sport{httpP}, []ep{ready(1, nodeName), ready(2, "")}, http, iTPLocal),
	one("itp-local-without-local-endpoint", []sport{httpP}, two(), http, iTPLocal),
	{"loadbalancer", func(a alloc) []step {
		return []step{st(a.svc("s", http, a.typ(v1.ServiceTypeLoadBalancer), ingress(false, a.lbIP())),
			slice("s", "a", false, []sport{httpP}, two()...))}
	}},
	{"loadbalancer-etp-local-health-check", func(a alloc) []step {
		return []step{st(a.svc("s", http, a.typ(v1.ServiceTypeLoadBalancer), ingress(false, a.lbIP()), eTPLocal(a.hcPort())),
			slice("s", "a", false, []sport{httpP}, ready(1, nodeName), ready(2, "")))}
	}},
	{"loadbalancer-source-ranges", func(a alloc) []step {
		return []step{st(a.svc("s", http, a.typ(v1.ServiceTypeLoadBalancer), ingress(false, a.lbIP()),
			sourceRanges(clientAddr+"/32", "198.19.0.0/16")),
			slice("s", "a", false, []sport{httpP}, two()...))}
	}},
	{"loadbalancer-ipmode-proxy-skipped", func(a alloc) []step {
		return []step{st(a.svc("s", http, a.typ(v1.ServiceTypeLoadBalancer), ingress(true, a.lbIP())),
			slice("s", "a", false, []sport{httpP}, two()...))}
	}},
	{"loadbalancer-without-node-ports", func(a alloc) []step {
		return []step{st(a.svc("s", http, a.typ(v1.ServiceTypeLoadBalancer), noLBNodePorts, ingress(false, a.lbIP())),
			slice("s", "a", false, []sport{httpP}, two()...))}
	}},
	{"loadbalancer-dual-stack-ingress", func(a alloc) []step {
		return []step{st(a.svc("s", http, ips(a.clusterIP(), a.clusterIP6()), a.typ(v1.ServiceTypeLoadBalancer),
			ingress(false, a.lbIP(), a.lbIP6())),
			slice("s", "a", false, []sport{httpP}, two()...), slice("s", "b", true, []sport{httpP}, two()...))}
	}},
	// Issue 21: a Service's families, health-check ports, node addresses.
	{"loadbalancer-ipv6-only-etp-local", func(a alloc) []step {
		return []step{st(a.svc("s", http, ips(a.clusterIP6()), a.typ(v1.ServiceTypeLoadBalancer), ingress(false, a.lbIP6()), eTPLocal(a.hcPort())),
			slice("s", "a", true, []sport{httpP}, ready(1, nodeName), ready(2, "")))}
	}},
	{"loadbalancer-health-check-etp-cluster", func(a alloc) []step {
		// The API server refuses healthCheckNodePort with the Cluster
		// policy; kube-proxy reads the object without it, as the
		// corpus is applied, and ignores the port.
		hc := func(s *v1.Service) { s.Spec.HealthCheckNodePort = a.hcPort() }
		return []step{st(a.svc("s", http, a.typ(v1.ServiceTypeLoadBalancer), ingress(false, a.lbIP()), hc),
			slice("s", "a", false, []sport{httpP}, two()...))}
	}},
	{"loadbalancer-without-node-ports-etp-local-health-check", func(a alloc) []step {
		return []step{st(a.svc("s", http, a.typ(v1.ServiceTypeLoadBalancer), noLBNodePorts, ingress(false, a.lbIP()), eTPLocal(a.hcPort())),
			slice("s", "a", false, []sport{httpP}, ready(1, nodeName), ready(2, "")))}
	}},
	{"nodeport-link-local-node-address", func(a alloc) []step {
		// The node has linkLocalNodeAddr too: kube-proxy serves node
		// ports on it when node ports are on every address.
		return []step{st(a.svc("s", http, a.typ(v1.ServiceTypeNodePort)), slice("s", "a", false, []sport{httpP}, two()...))}
	}},
	{"external-ips", func(a alloc) []step {
		return []step{st(a.svc("s", http, externalIPs(a.externalIP())), slice("s", "a", false, []sport{httpP}, two()...))}
	}},
	{"external-ips-etp-local", func(a alloc) []step {
		return []step{st(a.svc("s", http, externalIPs(a.externalIP()), eTPLocal(0)),
			slice("s", "a", false, []sport{httpP}, ready(1, nodeName), ready(2, "")))}
	}},
	one("affinity-client-ip", []sport{httpP}, two(), http, affinity(300)),
	one("affinity-default-timeout", []sport{httpP}, two(), http, affinity(0)),
	{"headless-ignored", func(a alloc) []step {
		return []step{st(a.svc("s", http, ips(v1.ClusterIPNone)), slice("s", "a", false, []sport{httpP}, two()...))}
	}},
	{"external-name-ignored", func(a alloc) []step {
		return []step{st(a.svc("s", http, ips(v1.ClusterIPNone), a.typ(v1.ServiceTypeExternalName)))}
	}},
	{"ipv6-cluster-ip", func(a alloc) []step {
		return []step{st(a.svc("s", http, ips(a.clusterIP6())), slice("s", "a", true, []sport{httpP}, two()...))}
	}},
	{"ipv6-nodeport", func(a alloc) []step {
		return []step{st(a.svc("s", http, ips(a.clusterIP6()), a.typ(v1.ServiceTypeNodePort)),
			slice("s", "a", true, []sport{httpP}, two()...))}
	}},
	{"dual-stack-cluster-ip", func(a alloc) []step {
		return []step{st(a.svc("s", http, ips(a.clusterIP(), a.clusterIP6())),
			slice("s", "a", false, []sport{httpP}, two()...), slice("s", "b", true, []sport{httpP}, ready(3, "")))}
	}},
	{"dual-stack-nodeport-etp-local", func(a alloc) []step {
		return []step{st(a.svc("s", http, ips(a.clusterIP6(), a.clusterIP()), a.typ(v1.ServiceTypeNodePort), eTPLocal(0)),
			slice("s", "a", false, []sport{httpP}, ready(1, nodeName), ready(2, "")),
			slice("s", "b", true, []sport{httpP}, ready(3, nodeName)))}
	}},
	{"slice-without-a-port", func(a alloc) []step {
		return []step{st(a.svc("s", http, port("alt", v1.ProtocolTCP, 81, 8081)),
			slice("s", "a", false, []sport{httpP}, ready(1, "")),
			slice("s", "b", false, []sport{httpP, altP}, ready(2, "")))}
	}},
	{"same-endpoint-in-two-slices", func(a alloc) []step {
		return []step{st(a.svc("s", http),
			slice("s", "a", false, []sport{httpP}, ready(1, ""), ready(2, "")),
			slice("s", "b", false, []sport{httpP}, ready(2, ""), ready(3, "")))}
	}},
	{"two-services-share-endpoints", func(a alloc) []step {
		return []step{st(a.svc("s", http), slice("s", "a", false, []sport{httpP}, two()...),
			a.svc("t", ips(a.clusterIP6()), http), slice("t", "a", true, []sport{httpP}, two()...))}
	}},
	// Updates: each step is the whole state of the case.
	{"update-endpoint-added", func(a alloc) []step {
		s := a.svc("s", http)
		return []step{st(s, slice("s", "a", false, []sport{httpP}, ready(1, ""))),
			st(s, slice("s", "a", false, []sport{httpP}, ready(1, ""), ready(2, "")))}
	}},
	{"update-endpoint-removed", func(a alloc) []step {
		s := a.svc("s", http)
		return []step{st(s, slice("s", "a", false, []sport{httpP}, ready(1, ""), ready(2, ""))),
			st(s, slice("s", "a", false, []sport{httpP}, ready(2, "")))}
	}},
	{"update-endpoint-not-ready", func(a alloc) []step {
		s := a.svc("s", http)
		return []step{st(s, slice("s", "a", false, []sport{httpP}, ready(1, ""), ready(2, ""))),
			st(s, slice("s", "a", false, []sport{httpP}, ready(1, ""), ep{b: 2, ready: ptr(false), serving: ptr(false)}))}
	}},
	{"update-endpoint-terminating", func(a alloc) []step {
		s := a.svc("s", http)
		return []step{st(s, slice("s", "a", false, []sport{httpP}, ready(1, ""))),
			st(s, slice("s", "a", false, []sport{httpP}, ep{b: 1, ready: ptr(false), serving: ptr(true), terminating: ptr(true)}))}
	}},
	{"update-service-removed", func(a alloc) []step {
		return []step{st(a.svc("s", http, a.typ(v1.ServiceTypeNodePort)), slice("s", "a", false, []sport{httpP}, two()...)), st()}
	}},
	{"update-port-renumbered", func(a alloc) []step {
		return []step{st(a.svc("s", http), slice("s", "a", false, []sport{httpP}, two()...)),
			st(a.svc("s", port("http", v1.ProtocolTCP, 81, 8080)), slice("s", "a", false, []sport{httpP}, two()...))}
	}},
	{"update-clusterip-to-nodeport", func(a alloc) []step {
		sl := slice("s", "a", false, []sport{httpP}, two()...)
		return []step{st(a.svc("s", http), sl), st(a.svc("s", http, a.typ(v1.ServiceTypeNodePort)), sl)}
	}},
	{"update-etp-cluster-to-local", func(a alloc) []step {
		sl := slice("s", "a", false, []sport{httpP}, ready(1, nodeName), ready(2, ""))
		return []step{st(a.svc("s", http, a.typ(v1.ServiceTypeNodePort)), sl),
			st(a.svc("s", http, a.typ(v1.ServiceTypeNodePort), eTPLocal(0)), sl)}
	}},
	// Another program's virtual server on kube-ipvs0 (see leftovers).
	one("excluded-virtual-server-on-the-vip-link", []sport{httpP}, two(), http),
	{"update-affinity-added", func(a alloc) []step {
		sl := slice("s", "a", false, []sport{httpP}, two()...)
		return []step{st(a.svc("s", http), sl), st(a.svc("s", http, affinity(60)), sl)}
	}},
	// An endpoint leaves a TCP Service before any traffic reached it
	// (idleCases: not probed before step 1): kube-proxy deletes the idle
	// destination in that sync, ipvskit keeps it at weight 0 until Drain
	// (idleRemoved; docs/kube-proxy-differences.md).
	{"update-idle-endpoint-removed", func(a alloc) []step {
		s := a.svc("s", http)
		return []step{st(s, slice("s", "a", false, []sport{httpP}, ready(1, ""), ready(2, ""))),
			st(s, slice("s", "a", false, []sport{httpP}, ready(2, "")))}
	}},
	// Issue 29: internalTrafficPolicy Local on a Service that is also
	// reachable from outside, with and without a local endpoint, beside
	// either external policy. Without one, kube-proxy's IPVS mode gives
	// the cluster IP every cluster endpoint (its syncEndpoint fallback,
	// whenever the port is externally accessible) and ipvskit gives it
	// none (fallbackCases; docs/kube-proxy-differences.md).
	policies("nodeport-itp-local-with-local-endpoint", v1.ServiceTypeNodePort, true, false, true),
	policies("nodeport-itp-local-without-local-endpoint", v1.ServiceTypeNodePort, true, false, false),
	policies("nodeport-itp-local-etp-local-with-local-endpoint", v1.ServiceTypeNodePort, true, true, true),
	policies("nodeport-itp-local-etp-local-without-local-endpoint", v1.ServiceTypeNodePort, true, true, false),
	policies("loadbalancer-itp-local-with-local-endpoint", v1.ServiceTypeLoadBalancer, true, false, true),
	policies("loadbalancer-itp-local-without-local-endpoint", v1.ServiceTypeLoadBalancer, true, false, false),
	policies("loadbalancer-etp-local-without-local-endpoint", v1.ServiceTypeLoadBalancer, false, true, false),
	policies("loadbalancer-itp-local-etp-local-with-local-endpoint", v1.ServiceTypeLoadBalancer, true, true, true),
	policies("loadbalancer-itp-local-etp-local-without-local-endpoint", v1.ServiceTypeLoadBalancer, true, true, false),
	// External IPs alone make a ClusterIP Service externally accessible,
	// so kube-proxy falls back here too.
	{"external-ips-itp-local-without-local-endpoint", func(a alloc) []step {
		return []step{st(a.svc("s", http, externalIPs(a.externalIP()), iTPLocal), slice("s", "a", false, []sport{httpP}, two()...))}
	}},
	// A load balancer with no node ports and no ingress yet is not
	// externally accessible: kube-proxy does not fall back, as for a
	// plain ClusterIP Service (itp-local-without-local-endpoint).
	{"loadbalancer-pending-itp-local-without-local-endpoint", func(a alloc) []step {
		return []step{st(a.svc("s", http, a.typ(v1.ServiceTypeLoadBalancer), noLBNodePorts, iTPLocal),
			slice("s", "a", false, []sport{httpP}, two()...))}
	}},
}

// policies is a static case of a Service of type typ (NodePort or
// LoadBalancer, with a load-balancer IP) with internal and external
// traffic policies Local or Cluster, and two endpoints, one of them on
// this node if local.
func policies(name string, typ v1.ServiceType, itpLocal, etpLocal, local bool) tcase {
	return tcase{name, func(a alloc) []step {
		opts := []func(*v1.Service){http, a.typ(typ)}
		if typ == v1.ServiceTypeLoadBalancer {
			opts = append(opts, ingress(false, a.lbIP()))
		}
		if itpLocal {
			opts = append(opts, iTPLocal)
		}
		if etpLocal && typ == v1.ServiceTypeLoadBalancer {
			opts = append(opts, eTPLocal(a.hcPort()))
		} else if etpLocal {
			opts = append(opts, eTPLocal(0))
		}
		eps := two()
		if local {
			eps[0] = ready(1, nodeName)
		}
		return []step{st(a.svc("s", opts...), slice("s", "a", false, []sport{httpP}, eps...))}
	}}
}
