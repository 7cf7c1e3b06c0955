package convert

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/ipvskit/ipvskit/proxier"
)

// frontKey is a frontend: a VIP's address, port and protocol, or a node port
// (addr unset) and its protocol. A health-check port is a TCP node port.
type frontKey struct {
	addr  netip.Addr
	port  int
	proto proxier.Protocol
}

// claim leaves out of ports (sorted by ID) every frontend the State cannot
// have: a VIP that is not usable, a cluster IP that is a node address, a
// frontend an earlier ID already has, and, on a node address, an external
// or load-balancer IP's port that is an earlier ID's node port or
// health-check port, or the reverse (one virtual server for both). It reads
// them in the order State.Validate does, so what it keeps is what Validate
// accepts.
func (c *converter) claim(ports []*portService, node proxier.Node) {
	nodeAddrs := map[netip.Addr]bool{}
	for _, a := range node.Addresses {
		nodeAddrs[a.Unmap()] = true
	}
	sortedAddrs := slices.SortedFunc(maps.Keys(nodeAddrs), netip.Addr.Compare)
	vips := map[frontKey]string{}
	nodePorts := map[frontKey]string{}
	// onNodeAddr returns the ID serving a node address at node port k's
	// port, if any.
	onNodeAddr := func(k frontKey) (string, bool) {
		for _, a := range sortedAddrs {
			if id, ok := vips[frontKey{addr: a, port: k.port, proto: k.proto}]; ok {
				return id, true
			}
		}
		return "", false
	}
	for _, p := range ports {
		pt := &p.svc.Ports[0]
		if pt.NodePort != 0 {
			k := frontKey{port: pt.NodePort, proto: pt.Protocol}
			if first, dup := nodePorts[k]; dup {
				c.skip(p.id, fmt.Sprintf("node port %d/%s is %s's too: left out", pt.NodePort, protocolName(pt.Protocol), first))
				pt.NodePort = 0
			} else if first, dup := onNodeAddr(k); dup {
				c.skip(p.id, fmt.Sprintf("node port %d/%s is %s's port on a node address: left out", pt.NodePort, protocolName(pt.Protocol), first))
				pt.NodePort = 0
			} else {
				nodePorts[k] = p.id
			}
		}
		keep := func(what string, addrs []netip.Addr) []netip.Addr {
			kept := slices.DeleteFunc(addrs, func(a netip.Addr) bool {
				k := frontKey{addr: a, port: pt.Port, proto: pt.Protocol}
				first, dup := vips[k]
				onNode, atNodePort := "", false
				if nodeAddrs[a] {
					onNode, atNodePort = nodePorts[frontKey{port: pt.Port, proto: pt.Protocol}]
				}
				switch {
				case unusableVIP(a) != "":
					c.skip(p.id, fmt.Sprintf("%s %v %s: left out", what, a, unusableVIP(a)))
				case nodeAddrs[a] && what == "cluster IP":
					c.skip(p.id, fmt.Sprintf("%s %v is a node address: left out", what, a))
				case dup:
					c.skip(p.id, fmt.Sprintf("%s %v port %d/%s is %s's too: left out", what, a, pt.Port, protocolName(pt.Protocol), first))
				case atNodePort:
					c.skip(p.id, fmt.Sprintf("%s %v is a node address, and port %d/%s a node port of %s there: left out", what, a, pt.Port, protocolName(pt.Protocol), onNode))
				default:
					vips[k] = p.id
					return false
				}
				return true
			})
			if len(kept) == 0 {
				return nil // as the Service would have had none
			}
			return kept
		}
		p.svc.ClusterIPs = keep("cluster IP", p.svc.ClusterIPs)
		p.svc.ExternalIPs = keep("external IP", p.svc.ExternalIPs)
		p.svc.LoadBalancerIPs = keep("load-balancer IP", p.svc.LoadBalancerIPs)
		if hc := p.svc.HealthCheckNodePort; hc != 0 {
			k := frontKey{port: hc, proto: proxier.TCP}
			if first, dup := nodePorts[k]; dup {
				c.skip(p.id, fmt.Sprintf("health-check node port %d is %s's too: left out", hc, first))
				p.svc.HealthCheckNodePort = 0
			} else if first, dup := onNodeAddr(k); dup {
				c.skip(p.id, fmt.Sprintf("health-check node port %d is %s's port on a node address: left out", hc, first))
				p.svc.HealthCheckNodePort = 0
			} else {
				nodePorts[k] = p.id
			}
		}
	}
}
