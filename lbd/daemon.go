package lbd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/ipvskit/ipvskit/proxier"
)

// Options configure a Daemon; nil means the zero Options.
type Options struct {
	// Logger gets the daemon's structured logs; nil discards them.
	Logger *slog.Logger
	// Checker makes the health checker; nil means HealthChecker(0, Logger).
	Checker CheckerMaker
	// Metrics, if not nil, records the daemon's metrics.
	Metrics *Metrics
	// DrainPeriod is how often removed real servers' drains are ended
	// (Proxier.Drain) and a failed update retried; 0 means 5 s.
	DrainPeriod time.Duration
}

// Daemon keeps a Proxier serving a Config as its real servers' health
// checks say. Its methods but Config may not be called concurrently with
// Run's loop other than through Reload.
type Daemon struct {
	p       *proxier.Proxier
	log     *slog.Logger
	m       *Metrics
	checker Checker
	drain   time.Duration

	cfg     atomic.Pointer[Config]
	down    map[Key]bool                // real servers whose checks say down
	sent    map[string]*proxier.Service // what the Proxier was last given
	sorry   map[string]bool             // virtual servers on their sorry server
	failed  bool                        // the last update failed after validation
	events  chan Event
	reloads chan reload
}

// reload is a Reload handed to Run's loop.
type reload struct {
	cfg  *Config
	done chan Applied
}

// Applied is what one change of the Proxier's services sent.
type Applied struct {
	Services     []string // the virtual servers updated, added or removed
	IPVSRequests int      // IPVS requests sent (an update in place is one)
	Err          error
}

// New makes a Daemon that serves cfg through p: its first Sync makes
// every real server up (those the checks find down leave as the checks
// say), and its checks start.
func New(ctx context.Context, p *proxier.Proxier, cfg *Config, o *Options) (*Daemon, error) {
	if o == nil {
		o = &Options{}
	}
	d := &Daemon{
		p: p, log: o.Logger, m: o.Metrics, drain: o.DrainPeriod,
		down: map[Key]bool{}, sent: map[string]*proxier.Service{}, sorry: map[string]bool{},
		events: make(chan Event, 1024), reloads: make(chan reload),
	}
	if d.log == nil {
		d.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if d.drain == 0 {
		d.drain = 5 * time.Second
	}
	d.cfg.Store(cfg)
	state := cfg.State(d.healthy)
	res, err := p.Sync(ctx, state)
	if err != nil {
		return nil, err
	}
	for name, svc := range state.Services {
		d.sent[name] = &svc
		_, d.sorry[name] = cfg.Service(name, d.healthy)
		d.m.sorryServer(name, d.sorry[name])
	}
	d.m.sent(res)
	d.log.Info("serving", "virtualServers", len(state.Services), "ipvsRequests", requests(res))
	mk := o.Checker
	if mk == nil {
		mk = HealthChecker(0, d.log)
	}
	if d.checker, err = mk(d.notify, d.m.observe); err != nil {
		return nil, err
	}
	if err := d.checker.Replace(cfg.targets()); err != nil {
		d.checker.Close()
		return nil, err
	}
	d.m.targets(cfg, d.down)
	return d, nil
}

// Config is the configuration the daemon serves.
func (d *Daemon) Config() *Config { return d.cfg.Load() }

// notify hands a checker's event to Run's loop.
func (d *Daemon) notify(ev Event) { d.events <- ev }

// healthy says whether rs is up: not down by its last event.
func (d *Daemon) healthy(vs string, rs *RealServer) bool {
	return !d.down[d.Config().VirtualServers[vs].key(vs, rs)]
}

// Run applies health events and reloads until ctx ends, and ends drains
// on its timer. It leaves the node serving: it cleans nothing up.
func (d *Daemon) Run(ctx context.Context) error {
	tick := time.NewTicker(d.drain)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return d.checker.Close()
		case ev := <-d.events:
			d.event(ctx, ev)
		case r := <-d.reloads:
			r.done <- d.reload(ctx, r.cfg)
		case <-tick.C:
			d.tick(ctx)
		}
	}
}

// Reload makes the daemon serve cfg: only the virtual servers that
// changed are sent, in place. It returns what was sent.
func (d *Daemon) Reload(ctx context.Context, cfg *Config) Applied {
	r := reload{cfg: cfg, done: make(chan Applied, 1)}
	select {
	case d.reloads <- r:
	case <-ctx.Done():
		return Applied{Err: ctx.Err()}
	}
	select {
	case a := <-r.done:
		return a
	case <-ctx.Done():
		return Applied{Err: ctx.Err()}
	}
}

// event applies one health change to its virtual server.
func (d *Daemon) event(ctx context.Context, ev Event) {
	cfg := d.Config()
	if cfg.VirtualServers[ev.Key.VirtualServer] == nil {
		return // gone in a reload
	}
	if ev.Up == !d.down[ev.Key] {
		return
	}
	if ev.Up {
		delete(d.down, ev.Key)
		d.log.Info("real server up", "virtualServer", ev.Key.VirtualServer, "realServer", ev.Key.Addr.String())
	} else {
		d.down[ev.Key] = true
		d.log.Warn("real server down", "virtualServer", ev.Key.VirtualServer, "realServer", ev.Key.Addr.String(), "error", errText(ev.Err))
	}
	d.m.health(ev.Key, ev.Up)
	d.update(ctx, cfg)
}

func (d *Daemon) reload(ctx context.Context, cfg *Config) Applied {
	old := d.Config()
	d.cfg.Store(cfg)
	for k := range d.down {
		if vs := cfg.VirtualServers[k.VirtualServer]; vs == nil || !vs.has(k) {
			delete(d.down, k)
		}
	}
	a := d.update(ctx, cfg)
	if err := d.checker.Replace(cfg.targets()); err != nil {
		d.log.Error("health checks not replaced", "error", err)
	}
	d.m.forget(old, cfg)
	d.m.targets(cfg, d.down)
	d.log.Info("reloaded", "changed", a.Services, "ipvsRequests", a.IPVSRequests, "error", errText(a.Err))
	return a
}

// has says whether k is one of vs's real servers.
func (vs *VirtualServer) has(k Key) bool {
	for _, rs := range vs.RealServers {
		if vs.key(k.VirtualServer, rs) == k {
			return true
		}
	}
	return false
}

// update sends the Proxier the virtual servers of cfg whose Service
// differs from what it was last given, and removes those cfg lacks.
func (d *Daemon) update(ctx context.Context, cfg *Config) Applied {
	changes := map[string]*proxier.Service{}
	var a Applied
	for _, name := range cfg.names() {
		svc, sorry := cfg.Service(name, d.healthy)
		if sorry != d.sorry[name] {
			d.sorry[name] = sorry
			d.log.Warn("sorry server", "virtualServer", name, "inUse", sorry)
			d.m.sorryServer(name, sorry)
		}
		if !reflect.DeepEqual(d.sent[name], svc) {
			changes[name] = svc
		}
	}
	for name := range d.sent {
		if cfg.VirtualServers[name] == nil {
			changes[name] = nil
			delete(d.sorry, name)
		}
	}
	if len(changes) == 0 && !d.failed {
		return a
	}
	for name := range changes {
		a.Services = append(a.Services, name)
	}
	res, err := d.p.Update(ctx, changes)
	a.IPVSRequests, a.Err = requests(res), err
	d.m.sent(res)
	var v *proxier.ValidationError
	if errors.As(err, &v) {
		d.log.Error("update refused", "error", err)
		return a
	}
	d.failed = err != nil
	for name, svc := range changes {
		if svc == nil {
			delete(d.sent, name)
		} else {
			d.sent[name] = svc
		}
	}
	if err != nil {
		d.log.Warn("update failed; retried on the drain timer", "error", err)
	}
	return a
}

// tick ends the drains that are over and retries a failed update.
func (d *Daemon) tick(ctx context.Context) {
	if d.failed {
		d.update(ctx, d.Config())
	}
	if _, err := d.p.Drain(ctx); err != nil {
		d.log.Warn("drain failed", "error", err)
	}
}

// requests counts the IPVS requests a sync sent.
func requests(res *proxier.Result) int {
	if res == nil || res.Plan == nil {
		return 0
	}
	return res.Plan.IPVSAdd.Len() + res.Plan.IPVSDelete.Len()
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
