package proxiertest

import (
	"context"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
)

// daemonIPVSDep is ipvsDep for a client that also runs sync daemons
// (proxier.DaemonClient, for Config.SyncDaemons): each of its calls is one
// operation.
type daemonIPVSDep struct {
	ipvsDep
	daemons proxier.DaemonClient
}

func (w *daemonIPVSDep) Daemons(ctx context.Context) ([]ipvs.Daemon, error) {
	return valued(w.in, proxier.SubsystemIPVS, "IPVS.Daemons", "list sync daemons",
		func() ([]ipvs.Daemon, error) { return w.daemons.Daemons(ctx) }, ipvsErr("list sync daemons", ""))
}

func (w *daemonIPVSDep) StartDaemon(ctx context.Context, d ipvs.Daemon) error {
	obj := d.State.String() + " sync daemon"
	return w.in.single(proxier.SubsystemIPVS, 0, "IPVS.StartDaemon", "start "+obj,
		func() error { return w.daemons.StartDaemon(ctx, d) }, ipvsErr("start", obj))
}

func (w *daemonIPVSDep) StopDaemon(ctx context.Context, s ipvs.DaemonState) error {
	obj := s.String() + " sync daemon"
	return w.in.single(proxier.SubsystemIPVS, 0, "IPVS.StopDaemon", "stop "+obj,
		func() error { return w.daemons.StopDaemon(ctx, s) }, ipvsErr("stop", obj))
}
