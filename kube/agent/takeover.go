package agent

import (
	"context"
	"errors"

	"github.com/ipvskit/ipvskit/proxier"
)

// PreviewTakeover is the dry run of a take-over of a kube-proxy node: it
// starts the informers, waits for them and for the agent's Node, makes the
// Proxier, converts the cluster's Services as a sync would, and returns
// what the adopting sync would change of what kube-proxy programmed
// (proxier.Proxier.PreviewTakeover), changing nothing on the node. It needs
// Options.Proxier.AdoptKubeProxy, and is called instead of Run, once; the
// informers stop when it returns.
func (a *Agent) PreviewTakeover(ctx context.Context) (*proxier.TakeoverPreview, error) {
	if !a.o.Proxier.AdoptKubeProxy {
		return nil, errors.New("agent: PreviewTakeover needs Options.Proxier.AdoptKubeProxy")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := a.open(ctx); err != nil {
		return nil, err
	}
	st, err := a.state()
	if err != nil {
		return nil, err
	}
	return a.p.PreviewTakeover(ctx, st)
}

// previewTakeover logs what the adopting sync of st is about to change of
// what kube-proxy programmed, a line per change, and sets the metric of
// their count. A preview that fails is logged and the sync goes on: the
// preview only reports.
func (a *Agent) previewTakeover(ctx context.Context, st *proxier.State) {
	tp, err := a.p.PreviewTakeover(ctx, st)
	if err != nil {
		a.log.Warn("take-over preview failed", "err", err)
		return
	}
	a.rep.metrics.TakeoverChanges(len(tp.Changes))
	if tp.Empty() {
		a.log.Info("take-over preview: no change to what kube-proxy programmed")
		return
	}
	a.log.Warn("take-over preview: the take-over changes what kube-proxy programmed",
		"changes", len(tp.Changes), "services", len(tp.Services()))
	for _, c := range tp.Changes {
		a.log.Warn("take-over change", "service", c.ServiceID, "frontend", c.Frontend, "object", c.Object, "change", c.Change)
	}
}
