package proxier

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"strings"

	"github.com/ipvskit/ipvskit/ipvs"
)

// Connection sync for failover (Config.SyncDaemons): the Proxier runs
// IPVS's connection-sync daemons, a master that sends the node's
// connection entries and a backup that takes them in, and keeps them
// running as configured, like everything else it owns.
//
// Ownership. A sync daemon carries no mark: the kernel holds one master
// and one backup per namespace, each with its parameters only. So the
// Config is the proof: a daemon running in a role the Config names, with
// exactly its parameters, is the Proxier's (its own, or an earlier run's:
// the first Sync adopts it and starts nothing, so a restart keeps syncing
// without a gap). One in a role the Config names with other parameters,
// which this Proxier did not start, is someone else's: the first Sync
// refuses it with a *DaemonConflictError and applies nothing, as it
// refuses another program's virtual server. A role the Config does not
// name is never read, stopped or started. Once the Proxier runs a daemon
// (started or adopted) the role is its own: Reconcile restarts it when it
// stopped and replaces it when its parameters changed (drift).

// SyncDaemon is a connection-sync daemon the Proxier runs: ipvs.Daemon,
// one word one shape (see Config.SyncDaemons for what is valid).
type SyncDaemon = ipvs.Daemon

// DaemonClient is what the Proxier needs of an IPVS client to run the sync
// daemons of Config.SyncDaemons: *ipvs.Client and ipvstest's fake have it.
// Deps.IPVS must have it when Config.SyncDaemons is set.
type DaemonClient interface {
	Daemons(ctx context.Context) ([]ipvs.Daemon, error)
	StartDaemon(ctx context.Context, d ipvs.Daemon) error
	StopDaemon(ctx context.Context, state ipvs.DaemonState) error
}

// DaemonConflictError says that, at the first Sync (or the first after a
// failure or Cleanup), a sync daemon ran in a role Config.SyncDaemons
// names, with other parameters, and the Proxier had not started it: another
// program's, or an earlier run's with another Config. Nothing is applied
// and the daemon is left as it is; stop it (ipvsadm --stop-daemon ROLE, or
// Cleanup of a Proxier with the old Config) for the next Sync to start the
// configured one. It wraps fs.ErrExist.
type DaemonConflictError struct {
	Conflicts []DaemonConflict
}

// DaemonConflict is one configured sync daemon (Want) whose role a daemon
// with other parameters (Found) holds.
type DaemonConflict struct {
	Want, Found SyncDaemon
}

func (c DaemonConflict) String() string {
	return fmt.Sprintf("config.syncDaemons: a %v sync daemon the proxier did not start runs (%s)", c.Want.State, daemonDiff(c.Found, c.Want))
}

func (e *DaemonConflictError) Error() string {
	lines := make([]string, len(e.Conflicts))
	for i, c := range e.Conflicts {
		lines[i] = c.String()
	}
	return "proxier: " + strings.Join(lines, "; ")
}

// Unwrap returns fs.ErrExist.
func (e *DaemonConflictError) Unwrap() error { return fs.ErrExist }

// daemons is what the Proxier knows of its sync daemons.
type daemons struct {
	// owned are the roles whose daemon the Proxier runs (started or
	// adopted), until Cleanup.
	owned map[ipvs.DaemonState]bool
	// todo is what the next apply does, as the last start decided; a
	// plan takes it (take).
	todo daemonChanges
}

// daemonChanges are the sync daemons a plan stops, then starts.
type daemonChanges struct {
	stops  []ipvs.DaemonState
	starts []SyncDaemon
}

// take returns the changes the last start decided, and forgets them.
func (d *daemons) take() daemonChanges {
	c := d.todo
	d.todo = daemonChanges{}
	return c
}

// preview is what a dry run shows: every configured daemon the Proxier
// does not run yet, started (the first Sync adopts one already running as
// configured and then starts nothing).
func (d *daemons) preview(want []SyncDaemon) daemonChanges {
	var c daemonChanges
	for _, w := range want {
		if !d.owned[w.State] {
			c.starts = append(c.starts, w)
		}
	}
	return c
}

// runningDaemons lists the sync daemons, by role.
func (p *Proxier) runningDaemons(ctx context.Context, what string) (map[ipvs.DaemonState]SyncDaemon, error) {
	ds, err := p.daemonc.Daemons(ctx)
	if err != nil {
		return nil, opErr(SubsystemIPVS, fmt.Errorf("%s: reading sync daemons: %w", what, err))
	}
	out := make(map[ipvs.DaemonState]SyncDaemon, len(ds))
	for _, d := range ds {
		out[d.State] = d
	}
	return out, nil
}

// planDaemons decides, at a start, what the apply does to the configured
// sync daemons: adopts those running as configured, starts the missing,
// replaces its own that changed, and refuses (a *DaemonConflictError) a
// role someone else's daemon holds.
func (p *Proxier) planDaemons(ctx context.Context) error {
	p.syncd.todo = daemonChanges{}
	if len(p.cfg.SyncDaemons) == 0 {
		return nil
	}
	running, err := p.runningDaemons(ctx, "start")
	if err != nil {
		return err
	}
	var c daemonChanges
	var conflicts []DaemonConflict
	for _, w := range p.cfg.SyncDaemons {
		h, ok := running[w.State]
		switch {
		case !ok:
			c.starts = append(c.starts, w)
		case daemonMatches(w, h):
			p.syncd.own(w.State) // ours, or an earlier run's: adopted
		case p.syncd.owned[w.State]:
			c.stops, c.starts = append(c.stops, w.State), append(c.starts, w) // ours, changed
		default:
			conflicts = append(conflicts, DaemonConflict{Want: w, Found: h})
		}
	}
	if len(conflicts) > 0 {
		return &DaemonConflictError{Conflicts: conflicts}
	}
	p.syncd.todo = c
	return nil
}

func (d *daemons) own(s ipvs.DaemonState) {
	if d.owned == nil {
		d.owned = map[ipvs.DaemonState]bool{}
	}
	d.owned[s] = true
}

// applyDaemons stops, then starts, the sync daemons of c; each started is
// the Proxier's.
func (p *Proxier) applyDaemons(ctx context.Context, c daemonChanges, res *Result) error {
	for _, s := range c.stops {
		res.sent.ipvs++
		if err := p.daemonc.StopDaemon(ctx, s); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return opErr(SubsystemIPVS, fmt.Errorf("sync daemons: %w", err))
		}
	}
	for _, d := range c.starts {
		res.sent.ipvs++
		if err := p.daemonc.StartDaemon(ctx, d); err != nil {
			return opErr(SubsystemIPVS, fmt.Errorf("sync daemons: %w", err))
		}
		p.syncd.own(d.State)
	}
	return nil
}

// repairDaemons is Reconcile's part: each configured daemon stopped is
// started again, each whose parameters changed is replaced, and each is
// reported as drift.
func (p *Proxier) repairDaemons(ctx context.Context, rep *ReconcileReport) error {
	if len(p.cfg.SyncDaemons) == 0 {
		return nil
	}
	running, err := p.runningDaemons(ctx, "reconcile")
	if err != nil {
		return err
	}
	var c daemonChanges
	for _, w := range p.cfg.SyncDaemons {
		obj := w.State.String() + " sync daemon"
		h, ok := running[w.State]
		switch {
		case !ok:
			rep.Drift = append(rep.Drift, Drift{Subsystem: SubsystemIPVS, Object: obj, Problem: "missing"})
			c.starts = append(c.starts, w)
		case !daemonMatches(w, h):
			rep.Drift = append(rep.Drift, Drift{Subsystem: SubsystemIPVS, Object: obj, Problem: daemonDiff(h, w)})
			c.stops, c.starts = append(c.stops, w.State), append(c.starts, w)
		}
	}
	return p.applyDaemons(ctx, c, &Result{})
}

// stopDaemons is Cleanup's part: it stops each configured daemon the
// Proxier runs, or that runs as configured (an earlier run's), and no other.
func (p *Proxier) stopDaemons(ctx context.Context) error {
	if len(p.cfg.SyncDaemons) == 0 {
		return nil
	}
	running, err := p.runningDaemons(ctx, "cleanup")
	if err != nil {
		return err
	}
	var c daemonChanges
	for _, w := range p.cfg.SyncDaemons {
		if h, ok := running[w.State]; ok && (p.syncd.owned[w.State] || daemonMatches(w, h)) {
			c.stops = append(c.stops, w.State)
		}
	}
	if err := p.applyDaemons(ctx, c, &Result{}); err != nil {
		return err
	}
	p.syncd = daemons{}
	return nil
}

// Kernel defaults of a sync daemon's unset fields.
var (
	defaultSyncGroup = netip.AddrFrom4([4]byte{224, 0, 0, 81})
)

const (
	defaultSyncPort = 8848
	defaultSyncTTL  = 1
)

// withDefaults is w as the kernel reads it back: the group, port and TTL
// unset are the defaults. MaxLen unset stays 0: the kernel derives it from
// the interface's MTU.
func withDefaults(w SyncDaemon) SyncDaemon {
	if !w.Group.IsValid() {
		w.Group = defaultSyncGroup
	}
	if w.Port == 0 {
		w.Port = defaultSyncPort
	}
	if w.TTL == 0 {
		w.TTL = defaultSyncTTL
	}
	return w
}

// daemonMatches says the daemon read back (h) is the configured one (w):
// the same role, interface, sync ID, group, port and TTL (unset ones are
// the kernel's defaults, on either side: a kernel from before the
// multicast parameters reports none) and message length (any, if w leaves
// it to the kernel).
func daemonMatches(w, h SyncDaemon) bool {
	w, h = withDefaults(w), withDefaults(h)
	if w.MaxLen == 0 {
		w.MaxLen = h.MaxLen
	}
	return w == h
}

// daemonDiff renders how h differs from the configured w.
func daemonDiff(h, w SyncDaemon) string {
	w, h = withDefaults(w), withDefaults(h)
	var f fields
	f.diff("interface", h.Interface, w.Interface)
	f.diff("sync ID", h.SyncID, w.SyncID)
	if w.MaxLen != 0 {
		f.diff("max length", h.MaxLen, w.MaxLen)
	}
	f.diff("group", h.Group, w.Group)
	f.diff("port", h.Port, w.Port)
	f.diff("TTL", h.TTL, w.TTL)
	return f.drift()
}
