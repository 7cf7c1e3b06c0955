package agent

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/ipvskit/ipvskit/kube/convert"
	"github.com/ipvskit/ipvskit/proxier"
)

// dropExcluded takes out of st every VIP (cluster, external or
// load-balancer IP) inside one of cidrs (ipvs.excludeCIDRs), and says
// which. The Proxier makes no virtual server there (proxier.Config's
// ExcludeCIDRs) and refuses a State that asks for one; kube-proxy serves
// such a VIP and leaves its virtual server behind once the Service goes.
// Dropping the VIP, not the Service, keeps the rest of the node served.
func dropExcluded(st *proxier.State, cidrs []netip.Prefix) []convert.Skipped {
	if len(cidrs) == 0 {
		return nil
	}
	var out []convert.Skipped
	for _, id := range slices.Sorted(maps.Keys(st.Services)) {
		svc := st.Services[id]
		drop := func(kind string, as []netip.Addr) []netip.Addr {
			return slices.DeleteFunc(slices.Clone(as), func(a netip.Addr) bool {
				i := slices.IndexFunc(cidrs, func(p netip.Prefix) bool { return p.Contains(a) })
				if i < 0 {
					return false
				}
				out = append(out, convert.Skipped{Service: id,
					Reason: fmt.Sprintf("%s %v is inside ipvs.excludeCIDRs %v: not served", kind, a, cidrs[i])})
				return true
			})
		}
		svc.ClusterIPs = drop("cluster IP", svc.ClusterIPs)
		svc.ExternalIPs = drop("external IP", svc.ExternalIPs)
		svc.LoadBalancerIPs = drop("load-balancer IP", svc.LoadBalancerIPs)
		st.Services[id] = svc
	}
	return out
}
