package walk

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// service is a random Service of a random name and kind.
func (w *Walk) service() *corev1.Service {
	r := w.r
	s := &corev1.Service{ObjectMeta: w.meta(pick(r, serviceNames))}
	types := []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer,
		corev1.ServiceTypeExternalName, ""}
	s.Spec.Type = pick(r, types)
	w.clusterIPs(s)
	if chance(r, 3) {
		for range 1 + r.IntN(2) {
			s.Spec.ExternalIPs = append(s.Spec.ExternalIPs, pick(r, externalIPs))
		}
	}
	if chance(r, 2) {
		for range 1 + r.IntN(2) {
			ing := corev1.LoadBalancerIngress{IP: pick(r, lbIPs)}
			switch r.IntN(4) {
			case 0:
				ing.IPMode = ptr.To(corev1.LoadBalancerIPModeProxy)
			case 1:
				ing.IPMode = ptr.To(corev1.LoadBalancerIPModeVIP)
			}
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, ing)
		}
	}
	if chance(r, 3) {
		for range 1 + r.IntN(2) {
			s.Spec.LoadBalancerSourceRanges = append(s.Spec.LoadBalancerSourceRanges, pick(r, ranges))
		}
	}
	if chance(r, 3) {
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		if chance(r, 2) {
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{
				TimeoutSeconds: ptr.To(pick(r, []int32{30, 10800, 0, 90000}))}}
		}
	}
	if chance(r, 2) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = pick(r, hcPorts)
	}
	if chance(r, 3) {
		s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
	}
	for i := range 1 + r.IntN(2) {
		p := corev1.ServicePort{Name: pick(r, portNames), Protocol: pick(r, protocols), Port: pick(r, portNumbers),
			TargetPort: intstr.FromInt32(8080)}
		if i == 1 && p.Name == "" {
			p.Name = "metrics"
		}
		if s.Spec.Type == corev1.ServiceTypeNodePort || s.Spec.Type == corev1.ServiceTypeLoadBalancer || chance(r, 8) {
			p.NodePort = pick(r, nodePorts)
		}
		s.Spec.Ports = append(s.Spec.Ports, p)
	}
	if sched := pick(r, schedulers); sched != "" {
		s.Annotations = map[string]string{"ipvskit.io/scheduler": sched}
		if sched == "mh" && chance(r, 2) {
			s.Annotations["ipvskit.io/scheduler-flags"] = "mh-fallback,mh-port"
		}
	}
	return s
}

// clusterIPs makes s single-stack (either family), dual-stack, headless,
// or without a cluster IP.
func (w *Walk) clusterIPs(s *corev1.Service) {
	r := w.r
	v4, v6 := pick(r, clusterIPv4), pick(r, clusterIPv6)
	switch r.IntN(8) {
	case 0:
		s.Spec.ClusterIP, s.Spec.ClusterIPs = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
	case 1:
		if s.Spec.Type == corev1.ServiceTypeExternalName {
			s.Spec.ExternalName = "example.invalid"
		}
	case 2, 3:
		s.Spec.ClusterIP, s.Spec.ClusterIPs = v4, []string{v4, v6}
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	case 4:
		s.Spec.ClusterIP, s.Spec.ClusterIPs = v6, []string{v6}
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	case 5:
		s.Spec.ClusterIP = v4 // an old object: no ipFamilies
	default:
		s.Spec.ClusterIP, s.Spec.ClusterIPs = v4, []string{v4}
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	}
}

// slice is a random EndpointSlice of a random name; now and then one
// without the service-name label, or labelled for another Service.
func (w *Walk) slice() *discoveryv1.EndpointSlice {
	r := w.r
	name := w.sliceName()
	svc, _, _ := strings.Cut(name, "-")
	s := &discoveryv1.EndpointSlice{ObjectMeta: w.meta(name)}
	switch {
	case chance(r, 20):
	case chance(r, 15):
		s.Labels = map[string]string{discoveryv1.LabelServiceName: pick(r, serviceNames)}
	default:
		s.Labels = map[string]string{discoveryv1.LabelServiceName: svc}
	}
	s.AddressType = pick(r, []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv4,
		discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN})
	for range 1 + r.IntN(2) {
		p := discoveryv1.EndpointPort{Name: ptr.To(pick(r, portNames)), Port: ptr.To(pick(r, []int32{8080, 8080, 8081, 0}))}
		if chance(r, 20) {
			p.Name = nil
		}
		if pr := pick(r, protocols); pr != "" {
			p.Protocol = ptr.To(pr)
		}
		s.Ports = append(s.Ports, p)
	}
	hinted := chance(r, 3) // kube-proxy narrows by hints only when every ready endpoint has some
	for range r.IntN(5) {
		s.Endpoints = append(s.Endpoints, w.endpoint(s.AddressType, hinted))
	}
	return s
}

func (w *Walk) endpoint(t discoveryv1.AddressType, hinted bool) discoveryv1.Endpoint {
	r := w.r
	var e discoveryv1.Endpoint
	var ip string
	switch {
	case t == discoveryv1.AddressTypeFQDN:
		ip = "db.example.invalid"
	case chance(r, 10): // of the other family, or not an address
		ip = pick(r, append(endpointIPv4, append(endpointIPv6, "0.0.0.0", "x")...))
	case t == discoveryv1.AddressTypeIPv6:
		ip = pick(r, endpointIPv6)
	default:
		ip = pick(r, endpointIPv4)
	}
	if !chance(r, 30) {
		e.Addresses = []string{ip}
	}
	tri := func() *bool {
		switch r.IntN(3) {
		case 0:
			return ptr.To(true)
		case 1:
			return ptr.To(false)
		}
		return nil
	}
	e.Conditions = discoveryv1.EndpointConditions{Ready: tri(), Serving: tri(), Terminating: tri()}
	if n := r.IntN(3); n < 2 {
		e.NodeName = ptr.To([]string{NodeName, "node-b"}[n])
	}
	if hinted {
		e.Hints = &discoveryv1.EndpointHints{}
		if !chance(r, 4) {
			e.Hints.ForZones = []discoveryv1.ForZone{{Name: pick(r, []string{Zone, "zone-b"})}}
		}
		if chance(r, 2) {
			e.Hints.ForNodes = []discoveryv1.ForNode{{Name: pick(r, []string{NodeName, "node-b"})}}
		}
	}
	return e
}
