package convert

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/ipvskit/ipvskit/proxier"
	corev1 "k8s.io/api/core/v1"
	utilnet "k8s.io/utils/net"
)

// serviceVIPs are a Service's addresses in the families it is proxied in.
type serviceVIPs struct {
	fams     []proxier.Family // the families it is proxied in
	cluster  []netip.Addr
	external []netip.Addr
	lb       []netip.Addr
	ranges   []netip.Prefix
}

func (v *serviceVIPs) hasLB(f proxier.Family) bool {
	return slices.ContainsFunc(v.lb, func(a netip.Addr) bool { return familyOf(a) == f })
}

func (v *serviceVIPs) hasExternal(f proxier.Family) bool {
	return slices.ContainsFunc(v.external, func(a netip.Addr) bool { return familyOf(a) == f })
}

func (c *converter) vips(key string, s *corev1.Service, typ corev1.ServiceType) *serviceVIPs {
	v := &serviceVIPs{}
	for _, f := range c.fams {
		str := clusterIPOf(f, s)
		if str == "" {
			continue // single-stack in another family: not proxied in f
		}
		a, ok := parseIP(str)
		switch {
		case !ok:
			c.skip(key, fmt.Sprintf("cluster IP %q does not parse: not proxied in %v", str, f))
		case familyOf(a) != f:
			c.skip(key, fmt.Sprintf("cluster IP %v is listed for %v: not proxied in %v", a, f, f))
		default:
			v.fams = append(v.fams, f)
			v.cluster = append(v.cluster, a)
		}
	}
	if len(v.fams) == 0 {
		return v
	}
	// takes says whether a of a proxied family belongs in the Service, and
	// reports why not if that is news.
	takes := func(what string, a netip.Addr) bool {
		f := familyOf(a)
		switch {
		case !slices.Contains(c.fams, f):
			return false // no proxier of that family, as in kube-proxy
		case !slices.Contains(v.fams, f):
			c.skip(key, fmt.Sprintf("%s %v is %v, a family the Service has no cluster IP of: kube-proxy's %v proxier does not proxy the Service", what, a, f, f))
			return false
		}
		return true
	}
	for _, str := range s.Spec.ExternalIPs {
		a, ok := parseIP(str)
		if !ok {
			if strings.TrimSpace(str) != "" {
				c.skip(key, fmt.Sprintf("external IP %q does not parse: ignored", str))
			}
			continue
		}
		if takes("external IP", a) && !slices.Contains(v.external, a) {
			v.external = append(v.external, a)
		}
	}
	c.loadBalancerIPs(key, s, typ, v, takes)
	c.sourceRanges(key, s, v)
	return v
}

// clusterIPOf is kube-proxy's GetClusterIPByFamily: the entry of
// spec.clusterIPs at the index of family f in spec.ipFamilies or, for an
// object without ipFamilies, spec.clusterIP if it is of family f.
func clusterIPOf(f proxier.Family, s *corev1.Service) string {
	want := corev1.IPv4Protocol
	if f == proxier.IPv6 {
		want = corev1.IPv6Protocol
	}
	if len(s.Spec.IPFamilies) == 0 {
		ip := s.Spec.ClusterIP
		if ip == "" || ip == corev1.ClusterIPNone {
			return ""
		}
		if (f == proxier.IPv6) == utilnet.IsIPv6String(ip) {
			return ip
		}
		return ""
	}
	for i, fam := range s.Spec.IPFamilies {
		if fam == want && i < len(s.Spec.ClusterIPs) {
			return s.Spec.ClusterIPs[i]
		}
	}
	return ""
}

// loadBalancerIPs are the VIP-mode ingress IPs of a LoadBalancer Service.
func (c *converter) loadBalancerIPs(key string, s *corev1.Service, typ corev1.ServiceType, v *serviceVIPs, takes func(string, netip.Addr) bool) {
	ingress := s.Status.LoadBalancer.Ingress
	if typ != corev1.ServiceTypeLoadBalancer {
		if len(ingress) > 0 {
			c.skip(key, fmt.Sprintf("status.loadBalancer.ingress is ignored for type %s", typ))
		}
		return
	}
	for _, ing := range ingress {
		if ing.IP == "" {
			continue // a hostname: nothing for the node to serve
		}
		if ing.IPMode != nil && *ing.IPMode != corev1.LoadBalancerIPModeVIP {
			c.skip(key, fmt.Sprintf("load-balancer IP %s has ipMode %s: the load balancer sends its traffic to the node, not to the IP", ing.IP, *ing.IPMode))
			continue
		}
		a, ok := parseIP(ing.IP)
		if !ok {
			c.skip(key, fmt.Sprintf("load-balancer IP %q does not parse: ignored", ing.IP))
			continue
		}
		if takes("load-balancer IP", a) && !slices.Contains(v.lb, a) {
			v.lb = append(v.lb, a)
		}
	}
}

// sourceRanges are the Service's load-balancer source ranges in the families
// it is proxied in, as kube-proxy reads them per family, written so that one
// list means the same for both families (see the package documentation).
func (c *converter) sourceRanges(key string, s *corev1.Service, v *serviceVIPs) {
	perFam := map[proxier.Family][]netip.Prefix{}
	anyOf := map[proxier.Family]bool{} // a zero-length range: no restriction
	for _, str := range s.Spec.LoadBalancerSourceRanges {
		p, ok := parseCIDR(str)
		if !ok {
			if strings.TrimSpace(str) != "" {
				c.skip(key, fmt.Sprintf("load-balancer source range %q does not parse: ignored, as kube-proxy does", str))
			}
			continue
		}
		f := familyOf(p.Addr())
		switch {
		case !slices.Contains(v.fams, f):
		case p.Bits() == 0:
			anyOf[f] = true
		case !slices.Contains(perFam[f], p):
			perFam[f] = append(perFam[f], p)
		}
	}
	restricted := false
	for _, f := range v.fams {
		if anyOf[f] {
			perFam[f] = nil
		}
		restricted = restricted || len(perFam[f]) > 0
	}
	if !restricted {
		return
	}
	for _, f := range v.fams {
		if len(perFam[f]) == 0 && v.hasLB(f) {
			perFam[f] = halves(f)
		}
		v.ranges = append(v.ranges, perFam[f]...)
	}
}
