package convert

import (
	"fmt"
	"slices"
	"time"

	"github.com/ipvskit/ipvskit/proxier"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// portService is one port of one Service on its way to a proxier.Service:
// the Service, and what the topology step needs that the State has no field
// for.
type portService struct {
	id  string
	svc proxier.Service
	eps []endpoint
	// fams are the families the Service is proxied in.
	fams []proxier.Family
	// usesCluster is kube-proxy's UsesClusterEndpoints for the port in each
	// family: whether it ever picks endpoints by the cluster policy, and so
	// by topology hints.
	usesCluster map[proxier.Family]bool
}

func (p *portService) hasFrontend() bool {
	s := &p.svc
	return len(s.ClusterIPs)+len(s.ExternalIPs)+len(s.LoadBalancerIPs) > 0 ||
		s.Ports[0].NodePort != 0 || s.HealthCheckNodePort != 0
}

// build is the proxier.Service, its endpoints sorted by address and port.
func (p *portService) build() proxier.Service {
	s := p.svc
	for _, e := range p.eps {
		s.Endpoints = append(s.Endpoints, e.Endpoint)
	}
	return s
}

// service converts one Service into a portService per port it proxies.
func (c *converter) service(s *corev1.Service) []*portService {
	key := s.Namespace + "/" + s.Name
	typ := s.Spec.Type
	if typ == "" {
		typ = corev1.ServiceTypeClusterIP // the API server's default
	}
	if reason := unproxied(s, typ); reason != "" {
		c.skip(key, reason)
		return nil
	}
	v := c.vips(key, s, typ)
	if len(v.fams) == 0 {
		c.skip(key, fmt.Sprintf("has no cluster IP of a proxied family (%v)", c.fams))
		return nil
	}
	t := c.traits(key, s, typ)

	var out []*portService
	seen := map[string]bool{}
	for i := range s.Spec.Ports {
		sp := &s.Spec.Ports[i]
		id := key
		if sp.Name != "" {
			id += ":" + sp.Name
		}
		proto := c.checkPort(id, i, sp, seen)
		if proto == "" {
			continue
		}
		seen[id] = true
		p := c.portService(id, sp, proto, v, &t)
		t.hc = 0 // the first port's service only
		p.eps = c.endpoints(key, sp.Name, proto, v.fams)
		out = append(out, p)
	}
	return out
}

// unproxied says why kube-proxy does not proxy s (of type typ), or "" if it
// does.
func unproxied(s *corev1.Service, typ corev1.ServiceType) string {
	switch {
	case s.Namespace == "" || s.Name == "":
		return "has no namespace or no name"
	case typ == corev1.ServiceTypeExternalName:
		return "type ExternalName: kube-proxy does not proxy it"
	case s.Spec.ClusterIP == corev1.ClusterIPNone:
		return "headless (clusterIP None): kube-proxy does not proxy it"
	case s.Spec.ClusterIP == "":
		return "has no cluster IP: kube-proxy does not proxy it"
	}
	return ""
}

// serviceTraits are what every port of a Service shares beside its VIPs.
type serviceTraits struct {
	typ           corev1.ServiceType
	externalLocal bool // external traffic policy Local, where it applies
	internalLocal bool // internal traffic policy Local
	withNodePort  bool // the type has node ports
	affinity      *proxier.SessionAffinity
	hc            int // the health-check node port, until the first port took it
}

// traits reads s's traits, reporting what it ignores of them.
func (c *converter) traits(key string, s *corev1.Service, typ corev1.ServiceType) serviceTraits {
	externallyAccessible := typ == corev1.ServiceTypeLoadBalancer || typ == corev1.ServiceTypeNodePort ||
		(typ == corev1.ServiceTypeClusterIP && len(s.Spec.ExternalIPs) > 0)
	t := serviceTraits{
		typ:           typ,
		externalLocal: externallyAccessible && s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal,
		internalLocal: s.Spec.InternalTrafficPolicy != nil && *s.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal,
		withNodePort:  typ == corev1.ServiceTypeNodePort || typ == corev1.ServiceTypeLoadBalancer,
	}
	t.affinity = c.affinity(key, s)
	t.hc = c.healthCheck(key, s, typ, t.externalLocal)
	return t
}

// checkPort is the protocol of spec.ports[i], whose id is id, or "" (and a
// report) if the port is not proxied; seen holds the ids taken so far.
func (c *converter) checkPort(id string, i int, sp *corev1.ServicePort, seen map[string]bool) corev1.Protocol {
	proto := protocol(sp.Protocol)
	switch {
	case proto == "":
		c.skip(id, fmt.Sprintf("protocol %q is not TCP, UDP or SCTP", sp.Protocol))
	case sp.Name != "" && len(validation.IsDNS1123Label(sp.Name)) > 0:
		// The API server refuses such a name; the proxier does too.
		c.skip(id, fmt.Sprintf("port name %q is not a DNS label: ignored", sp.Name))
	case seen[id]:
		c.skip(id, fmt.Sprintf("spec.ports[%d] repeats the port name: the first port of the name is used", i))
	case sp.Port < 1 || sp.Port > 65535:
		c.skip(id, fmt.Sprintf("port %d is out of range 1-65535", sp.Port))
	default:
		return proto
	}
	return ""
}

// nodePort is the port's node port, or 0 (and a report of a set one that
// is ignored).
func (c *converter) nodePort(id string, sp *corev1.ServicePort, t *serviceTraits) int {
	switch {
	case sp.NodePort == 0:
	case !t.withNodePort:
		c.skip(id, fmt.Sprintf("node port %d is ignored for type %s", sp.NodePort, t.typ))
	case sp.NodePort < 0 || sp.NodePort > 65535:
		c.skip(id, fmt.Sprintf("node port %d is out of range 1-65535", sp.NodePort))
	default:
		return int(sp.NodePort)
	}
	return 0
}

// portService is the portService of one port, without its endpoints.
func (c *converter) portService(id string, sp *corev1.ServicePort, proto corev1.Protocol, v *serviceVIPs, t *serviceTraits) *portService {
	nodePort := c.nodePort(id, sp, t)
	p := &portService{
		id:   id,
		fams: v.fams,
		svc: proxier.Service{
			ClusterIPs:               slices.Clone(v.cluster),
			IPFamilies:               slices.Clone(v.fams),
			ExternalIPs:              slices.Clone(v.external),
			LoadBalancerIPs:          slices.Clone(v.lb),
			LoadBalancerSourceRanges: slices.Clone(v.ranges),
			Ports:                    []proxier.Port{{Name: sp.Name, Protocol: protocolOf(proto), Port: int(sp.Port), NodePort: nodePort}},
			SessionAffinity:          cloneAffinity(t.affinity),
			HealthCheckNodePort:      t.hc,
		},
		usesCluster: map[proxier.Family]bool{},
	}
	if t.externalLocal {
		p.svc.ExternalTrafficPolicy = proxier.Local
	}
	if t.internalLocal {
		p.svc.InternalTrafficPolicy = proxier.Local
	}
	for _, f := range v.fams {
		// kube-proxy's ExternallyAccessible and UsesClusterEndpoints, on
		// the port's view in family f.
		accessible := nodePort != 0 || v.hasLB(f) || v.hasExternal(f)
		p.usesCluster[f] = !t.internalLocal || accessible
	}
	return p
}

// protocol is p with the API server's default (TCP), or "" if IPVS cannot
// balance it.
func protocol(p corev1.Protocol) corev1.Protocol {
	switch p {
	case "":
		return corev1.ProtocolTCP
	case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		return p
	}
	return ""
}

// affinity is the Service's session affinity: ClientIP with its timeout
// (the API server's default, 10800 s, when unset or out of range).
func (c *converter) affinity(key string, s *corev1.Service) *proxier.SessionAffinity {
	if s.Spec.SessionAffinity != corev1.ServiceAffinityClientIP {
		return nil
	}
	secs := int32(corev1.DefaultClientIPServiceAffinitySeconds)
	if cfg := s.Spec.SessionAffinityConfig; cfg != nil && cfg.ClientIP != nil && cfg.ClientIP.TimeoutSeconds != nil {
		secs = *cfg.ClientIP.TimeoutSeconds
		if secs < 1 || time.Duration(secs)*time.Second > proxier.MaxAffinityTimeout {
			c.skip(key, fmt.Sprintf("session affinity timeoutSeconds %d is out of range 1-%d: %d is used",
				secs, int(proxier.MaxAffinityTimeout/time.Second), corev1.DefaultClientIPServiceAffinitySeconds))
			secs = corev1.DefaultClientIPServiceAffinitySeconds
		}
	}
	return &proxier.SessionAffinity{Timeout: time.Duration(secs) * time.Second}
}

func cloneAffinity(a *proxier.SessionAffinity) *proxier.SessionAffinity {
	if a == nil {
		return nil
	}
	c := *a
	return &c
}

// healthCheck is kube-proxy's health-check node port: for type LoadBalancer
// with the external traffic policy Local, else 0 (and a set one is
// reported).
func (c *converter) healthCheck(key string, s *corev1.Service, typ corev1.ServiceType, externalLocal bool) int {
	hc := s.Spec.HealthCheckNodePort
	if typ != corev1.ServiceTypeLoadBalancer || !externalLocal {
		if hc != 0 {
			// proxier.Service refuses it with the Cluster policy.
			c.skip(key, fmt.Sprintf("healthCheckNodePort %d is ignored: kube-proxy uses it only for type LoadBalancer with externalTrafficPolicy Local (the API server allows it nowhere else)", hc))
		}
		return 0
	}
	if hc == 0 {
		c.skip(key, "has no healthCheckNodePort (type LoadBalancer, externalTrafficPolicy Local): no health check")
		return 0
	}
	if hc < 0 || hc > 65535 {
		c.skip(key, fmt.Sprintf("health-check node port %d is out of range 1-65535", hc))
		return 0
	}
	return int(hc)
}
