package proxier

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/ipvs"
)

// Stale datagram flows. A UDP client that keeps sending from one socket
// keeps one conntrack entry alive. One made before its frontend existed
// (the datagrams left by the node's default route, or the node itself
// answered port unreachable for a node port) has no NAT, and IPVS does not
// rewrite a confirmed entry: once the service exists, its backend's
// replies match no flow and the client is never answered, until the
// Proxier deletes the entry. One made by IPVS for a destination since
// removed is normally gone already: with the sysctl profile's
// net/ipv4/vs/expire_nodest_conn=1 and conntrack=1 the kernel expires the
// removed destination's IPVS connections and their conntrack entries
// itself; deleting what is left follows kube-proxy. So after a sync, the
// Proxier deletes the flows of the frontends whose destinations changed
// that no current destination answers.
//
// SCTP is treated like UDP: its destinations, too, are removed at once
// rather than drained, and SCTP clients often keep their port (one
// association after another on the same tuple). TCP is left alone: its
// destinations drain, and its entries die with their connections.

// staleFrontends adds to pending the datagram virtual servers whose flows
// may be stale once the plan, made against have, is applied: those that
// lose a destination, those that go from no destinations (or from not
// existing) to some, and those removed. It reads the plan's requests, so its
// cost follows the change, not the number of services.
func staleFrontends(have *desired, pl *Plan, pending map[ipvs.ServiceKey]bool) {
	for _, op := range pl.IPVSDelete.All() {
		if k := op.Service.Key(); datagram(k) && (op.Kind == ipvs.OpDeleteService || op.Kind == ipvs.OpDeleteDestination) {
			pending[k] = true
		}
	}
	for _, op := range pl.IPVSAdd.All() {
		k := op.Service.Key()
		if op.Kind != ipvs.OpAddDestination || !datagram(k) || pending[k] {
			continue
		}
		var h *virtualServer
		if have != nil {
			h = have.servers[k]
		}
		if h == nil || len(h.dests) == 0 {
			pending[k] = true
		}
	}
}

func datagram(k ipvs.ServiceKey) bool { return k.Protocol == ipvs.UDP || k.Protocol == ipvs.SCTP }

// flowFilters returns, for each pending frontend, the filter that deletes
// its flows that none of its destinations in cur answers: every flow to it
// if it has none or is gone. They are built from the state the kernel is in
// when they are sent, so a retry after a failure never deletes a flow to a
// destination that has come back since. Sorted by frontend.
func flowFilters(pending map[ipvs.ServiceKey]bool, cur *desired) []conntrack.Filter {
	keys := slices.SortedFunc(maps.Keys(pending), compareServiceKeys)
	out := make([]conntrack.Filter, 0, len(keys))
	for _, k := range keys {
		f := conntrack.Filter{Protocol: k.Protocol, Addr: k.Addr.Unmap(), Port: k.Port}
		if vs := cur.servers[k]; vs != nil {
			for _, d := range vs.dests {
				dk := d.Key()
				f.Keep = append(f.Keep, netip.AddrPortFrom(dk.Addr.Unmap(), dk.Port))
			}
		}
		out = append(out, f)
	}
	return out
}

// cleanFlows deletes the stale flows of the pending frontends, if there are
// any and the Proxier has a Conntrack. They stay pending if that fails, and
// the next Sync tries again.
func (p *Proxier) cleanFlows(ctx context.Context, res *Result) error {
	if p.ct == nil || len(p.pending.flows) == 0 {
		return nil
	}
	t := time.Now()
	n, err := p.ct.Delete(ctx, flowFilters(p.pending.flows, p.kernel.applied)...)
	res.ConntrackDeleted += n
	res.Phases.Conntrack += time.Since(t)
	if err != nil {
		return opErr(SubsystemConntrack, fmt.Errorf("deleting stale flows of %d frontends (kept for the next sync): %w", len(p.pending.flows), err))
	}
	clear(p.pending.flows)
	return nil
}
