package proxier

import (
	"maps"
	"slices"
)

// cloneService returns a deep copy of s: the Proxier keeps what it was
// given, so that a caller changing its own slices or maps later changes
// nothing it holds.
func cloneService(s *Service) Service { return cloneServiceIn(s, nil) }

// cloneServiceIn is cloneService with its slices cut from a (see arena).
func cloneServiceIn(s *Service, a *arena) Service {
	c := *s
	if a == nil {
		c.ClusterIPs = slices.Clone(s.ClusterIPs)
		c.IPFamilies = slices.Clone(s.IPFamilies)
		c.Ports = slices.Clone(s.Ports)
		c.ExternalIPs = slices.Clone(s.ExternalIPs)
		c.LoadBalancerIPs = slices.Clone(s.LoadBalancerIPs)
		c.LoadBalancerSourceRanges = slices.Clone(s.LoadBalancerSourceRanges)
		c.Endpoints = slices.Clone(s.Endpoints)
	} else {
		c.ClusterIPs = a.addrs.clone(s.ClusterIPs)
		c.IPFamilies = a.families.clone(s.IPFamilies)
		c.Ports = a.ports.clone(s.Ports)
		c.ExternalIPs = a.addrs.clone(s.ExternalIPs)
		c.LoadBalancerIPs = a.addrs.clone(s.LoadBalancerIPs)
		c.LoadBalancerSourceRanges = a.prefixes.clone(s.LoadBalancerSourceRanges)
		c.Endpoints = a.endpoints.clone(s.Endpoints)
	}
	if s.SessionAffinity != nil {
		sa := *s.SessionAffinity
		c.SessionAffinity = &sa
	}
	for i := range c.Endpoints {
		if c.Endpoints[i].Ports != nil {
			c.Endpoints[i].Ports = maps.Clone(c.Endpoints[i].Ports)
		}
	}
	return c
}

// serviceEqual reports whether a and b ask for the same thing: every field
// equal, an empty slice or map the same as a missing one.
func serviceEqual(a, b *Service) bool {
	if a.ExternalTrafficPolicy != b.ExternalTrafficPolicy || a.InternalTrafficPolicy != b.InternalTrafficPolicy ||
		a.Scheduler != b.Scheduler || a.SchedulerFlags != b.SchedulerFlags || a.OnePacket != b.OnePacket || a.FirewallMark != b.FirewallMark || a.HealthCheckNodePort != b.HealthCheckNodePort ||
		a.Forward != b.Forward || a.Tunnel != b.Tunnel ||
		!slices.Equal(a.ClusterIPs, b.ClusterIPs) || !slices.Equal(a.IPFamilies, b.IPFamilies) || !slices.Equal(a.Ports, b.Ports) ||
		!slices.Equal(a.ExternalIPs, b.ExternalIPs) || !slices.Equal(a.LoadBalancerIPs, b.LoadBalancerIPs) ||
		!slices.Equal(a.LoadBalancerSourceRanges, b.LoadBalancerSourceRanges) ||
		(a.SessionAffinity == nil) != (b.SessionAffinity == nil) ||
		(a.SessionAffinity != nil && *a.SessionAffinity != *b.SessionAffinity) ||
		len(a.Endpoints) != len(b.Endpoints) {
		return false
	}
	for i := range a.Endpoints {
		if !endpointEqual(&a.Endpoints[i], &b.Endpoints[i]) {
			return false
		}
	}
	return true
}

// endpointEqual reports whether x and y are equal, field by field (an
// empty Ports the same as none).
func endpointEqual(x, y *Endpoint) bool {
	return x.Addr == y.Addr && x.Ready == y.Ready && x.Serving == y.Serving && x.Terminating == y.Terminating &&
		x.Local == y.Local && maps.Equal(x.Ports, y.Ports) && x.Weight == y.Weight && x.Quiesced == y.Quiesced &&
		x.UpperThreshold == y.UpperThreshold && x.LowerThreshold == y.LowerThreshold
}

func cloneNode(n *Node) Node {
	return Node{Addresses: slices.Clone(n.Addresses), NodePortCIDRs: slices.Clone(n.NodePortCIDRs)}
}

func nodeEqual(a, b *Node) bool {
	return slices.Equal(a.Addresses, b.Addresses) && slices.Equal(a.NodePortCIDRs, b.NodePortCIDRs)
}
