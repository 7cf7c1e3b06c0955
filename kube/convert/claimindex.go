package convert

import (
	"net/netip"
	"slices"

	"github.com/ipvskit/ipvskit/proxier"
)

// claimIndex is what the Converter knows of who contends for what: the
// ports (by ID, before the claims) that want each frontend. claim settles
// a port's frontends by the ports of lower IDs that want the same
// frontends, and (on a node address) the node port at a VIP's port; so
// ports linked by such keys, transitively, form a component whose claims
// settle as Convert settles them, whatever the other ports hold.
type claimIndex struct {
	nodeAddrs map[netip.Addr]bool
	by        map[frontKey][]string
	// loose are the keys of ports removed since the last component: those
	// that contended with them are to settle again.
	loose []frontKey
}

func newClaimIndex() claimIndex { return claimIndex{by: map[frontKey][]string{}} }

func nodeAddrSet(n proxier.Node) map[netip.Addr]bool {
	m := map[netip.Addr]bool{}
	for _, a := range n.Addresses {
		m[a.Unmap()] = true
	}
	return m
}

// keys are the frontends p wants, and for a VIP on a node address the node
// port at its port, which claim weighs against it.
func (ci *claimIndex) keys(p *portService) []frontKey {
	pt := &p.svc.Ports[0]
	var out []frontKey
	if pt.NodePort != 0 {
		out = append(out, frontKey{port: pt.NodePort, proto: pt.Protocol})
	}
	if hc := p.svc.HealthCheckNodePort; hc != 0 {
		out = append(out, frontKey{port: hc, proto: proxier.TCP})
	}
	for _, as := range [][]netip.Addr{p.svc.ClusterIPs, p.svc.ExternalIPs, p.svc.LoadBalancerIPs} {
		for _, a := range as {
			out = append(out, frontKey{addr: a, port: pt.Port, proto: pt.Protocol})
			if ci.nodeAddrs[a] {
				out = append(out, frontKey{port: pt.Port, proto: pt.Protocol})
			}
		}
	}
	return out
}

func (ci *claimIndex) add(id string, p *portService) {
	for _, k := range ci.keys(p) {
		if !slices.Contains(ci.by[k], id) {
			ci.by[k] = append(ci.by[k], id)
		}
	}
}

func (ci *claimIndex) remove(id string, p *portService) {
	for _, k := range ci.keys(p) {
		ids := slices.DeleteFunc(ci.by[k], func(s string) bool { return s == id })
		if len(ids) == 0 {
			delete(ci.by, k)
		} else {
			ci.by[k] = ids
		}
		ci.loose = append(ci.loose, k)
	}
}

// component is the IDs, sorted, of seeds and of every port linked to them
// or to the loose keys through the frontends they want.
func (ci *claimIndex) component(seeds []string, ports map[string]*portService) []string {
	seen := map[string]bool{}
	doneKeys := map[frontKey]bool{}
	var queue []string
	push := func(ids ...string) {
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				queue = append(queue, id)
			}
		}
	}
	visit := func(ks []frontKey) {
		for _, k := range ks {
			if !doneKeys[k] {
				doneKeys[k] = true
				push(ci.by[k]...)
			}
		}
	}
	push(seeds...)
	visit(ci.loose)
	ci.loose = nil
	for i := 0; i < len(queue); i++ {
		if p, ok := ports[queue[i]]; ok {
			visit(ci.keys(p))
		}
	}
	slices.Sort(queue)
	return queue
}
