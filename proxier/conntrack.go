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
// keeps one conntrack entry alive, and in it the backend chosen for its
// first datagram, or no backend at all if it started while the service had
// none (the reply tuple then says the VIP itself answers, and IPVS does not
// rewrite a confirmed entry). After a sync, the Proxier deletes the flows
// of the frontends whose destinations changed that no current destination
// answers. SCTP is treated like UDP: its destinations, too, are removed at
// once rather than drained, and SCTP clients often keep their port (one
// association after another on the same tuple), so an entry of a dead
// association would steer the next one to the same dead destination. TCP
// is left alone: its destinations drain, and its entries die with their
// connections.

// staleFrontends adds to pending the datagram virtual servers whose flows
// may be stale once the kernel goes from have to want: those that lost a
// destination, those that went from no destinations (or from not existing)
// to some, and those removed.
func staleFrontends(have, want *desired, pending map[ipvs.ServiceKey]bool) {
	var hs map[ipvs.ServiceKey]*virtualServer
	if have != nil {
		hs = have.servers
	}
	for k, h := range hs {
		if !datagram(k) {
			continue
		}
		w := want.servers[k]
		if w == nil || lostDestination(h, w) {
			pending[k] = true
		}
	}
	for k, w := range want.servers {
		if h := hs[k]; datagram(k) && len(w.dests) > 0 && (h == nil || len(h.dests) == 0) {
			pending[k] = true
		}
	}
}

func datagram(k ipvs.ServiceKey) bool { return k.Protocol == ipvs.UDP || k.Protocol == ipvs.SCTP }

func lostDestination(h, w *virtualServer) bool {
	for dk := range h.dests {
		if _, ok := w.dests[dk]; !ok {
			return true
		}
	}
	return false
}

// flowFilters returns, for each pending frontend, the filter that deletes
// its flows that none of its destinations in cur answers: every flow to it
// if it has none or is gone. They are built from the state the kernel is in
// when they are sent, so a retry after a failure never deletes a flow to a
// destination that has come back since. Sorted by frontend.
func flowFilters(pending map[ipvs.ServiceKey]bool, cur *desired) []conntrack.Filter {
	keys := slices.SortedFunc(maps.Keys(pending), compareServiceKeys)
	out := make([]conntrack.Filter, 0, len(keys))
	for _, k := range keys {
		f := conntrack.Filter{Protocol: conntrack.Protocol(k.Protocol), Addr: k.Addr.Unmap(), Port: k.Port}
		if vs := cur.servers[k]; vs != nil {
			for _, dk := range sortedDestKeys(vs.dests) {
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
	if p.ct == nil || len(p.ctPending) == 0 {
		return nil
	}
	t := time.Now()
	n, err := p.ct.Delete(ctx, flowFilters(p.ctPending, p.applied)...)
	res.ConntrackDeleted += n
	res.Phases.Conntrack += time.Since(t)
	if err != nil {
		return opErr(SubsystemConntrack, fmt.Errorf("deleting stale flows of %d frontends (kept for the next sync): %w", len(p.ctPending), err))
	}
	clear(p.ctPending)
	return nil
}
