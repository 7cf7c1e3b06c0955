package convert

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/ipvskit/ipvskit/proxier"
)

// topologyMode is how kube-proxy narrows a port's cluster-policy endpoints
// by hints.
type topologyMode uint8

const (
	noTopology topologyMode = iota
	sameNode                // every ready endpoint has node hints, one for this node
	sameZone                // every ready endpoint has zone hints, one for this zone
)

// modeOf is kube-proxy's topologyModeFromHints over one family's endpoints.
func modeOf(eps []endpoint, node, zone string) topologyMode {
	ready, allNode, forNode, allZone, forZone := false, true, false, true, false
	for _, e := range eps {
		if !e.Ready {
			continue
		}
		ready = true
		if len(e.nodes) == 0 {
			allNode = false
		} else if slices.Contains(e.nodes, node) {
			forNode = true
		}
		if len(e.zones) == 0 {
			allZone = false
		} else if slices.Contains(e.zones, zone) {
			forZone = true
		}
	}
	switch {
	case !ready:
		return noTopology
	case allNode && forNode:
		return sameNode
	case allZone && forZone:
		return sameZone
	}
	return noTopology
}

func (m topologyMode) available(e *endpoint, node, zone string) bool {
	switch m {
	case sameNode:
		return slices.Contains(e.nodes, node)
	case sameZone:
		return slices.Contains(e.zones, zone)
	}
	return true
}

// topology drops, in each family where kube-proxy narrows p's cluster-policy
// endpoints by hints, the ready endpoints not hinted for this node or zone.
// The fallback to serving, terminating endpoints needs no care: a mode is
// only chosen when some ready endpoint is hinted here, so that fallback does
// not happen. A local ready endpoint that a local-policy VIP of p uses is
// kept, and reported.
func (c *converter) topology(p *portService) {
	for _, f := range p.fams {
		if !p.usesCluster[f] {
			continue
		}
		var fam []endpoint
		for _, e := range p.eps {
			if familyOf(e.Addr) == f {
				fam = append(fam, e)
			}
		}
		mode := modeOf(fam, c.node.Name, c.node.Zone)
		if mode == noTopology {
			continue
		}
		clusterVIP, localVIP := c.policies(&p.svc, f)
		if !clusterVIP {
			continue // only local-policy VIPs, which hints do not narrow
		}
		where := "zone " + c.node.Zone
		if mode == sameNode {
			where = "node " + c.node.Name
		}
		p.eps = slices.DeleteFunc(p.eps, func(e endpoint) bool {
			if familyOf(e.Addr) != f || !e.Ready || mode.available(&e, c.node.Name, c.node.Zone) {
				return false
			}
			if e.Local && localVIP {
				c.skip(p.id, fmt.Sprintf("endpoint %v is not hinted for %s, but a local-policy VIP uses it: kept, so the cluster-policy VIPs use it too (kube-proxy's would not)",
					netip.AddrPortFrom(e.Addr, uint16(e.port)), where))
				return false
			}
			return true
		})
	}
}

// policies says whether s has, in family f, frontends whose endpoints are
// chosen by the cluster policy, and frontends chosen by the local policy.
func (c *converter) policies(s *proxier.Service, f proxier.Family) (cluster, local bool) {
	of := func(addrs []netip.Addr) bool {
		return slices.ContainsFunc(addrs, func(a netip.Addr) bool { return familyOf(a) == f })
	}
	if of(s.ClusterIPs) {
		if s.InternalTrafficPolicy == proxier.Local {
			local = true
		} else {
			cluster = true
		}
	}
	if of(s.ExternalIPs) || of(s.LoadBalancerIPs) || (s.Ports[0].NodePort != 0 && c.nodePortFams[f]) {
		if s.ExternalTrafficPolicy == proxier.Local {
			local = true
		} else {
			cluster = true
		}
	}
	return cluster, local
}
