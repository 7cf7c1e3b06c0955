package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/kube/convert"
	"github.com/ipvskit/ipvskit/kube/health"
	"github.com/ipvskit/ipvskit/proxier"
)

// Options are what an Agent needs beside its Config.
type Options struct {
	// Config is kube-proxy's configuration (LoadConfig, or DefaultConfig).
	Config *Config
	// NodeName is the node the agent serves; an endpoint there is local.
	NodeName string
	// Client talks to the API server.
	Client kubernetes.Interface
	// Proxier is ipvskit's own part of the Proxier's configuration
	// (Instance or KubeProxyNames, AdoptKubeProxy, LinkName, Backend,
	// Families, MaxDrain); the agent fills in what Config decides
	// (MasqueradeAll, MasqueradeBit, StrictARP, LocalDetector), plus
	// Observer and Logger.
	Proxier proxier.Config
	// NewProxier makes the Proxier from the complete configuration, once
	// the agent knows its Node (detectLocalMode NodeCIDR needs its
	// podCIDRs): with the real clients (see the command) or fakes.
	NewProxier func(*proxier.Config) (*proxier.Proxier, error)
	// SetTimeouts, if set, applies Config.Timeouts (ipvs.Client.SetTimeouts).
	SetTimeouts func(context.Context, ipvs.Timeouts) error
	// NodeAddresses returns the node's addresses that may serve node ports
	// (without the VIP link's), read at every sync; nil means none.
	NodeAddresses func() ([]netip.Addr, error)
	// Listen, if set, opens every socket the agent listens on: /healthz,
	// /metrics and the health-check node ports, which a load balancer
	// probes on the node's addresses. Kernel.Listen opens them in the
	// kernel clients' namespace, the node's. Nil means net.Listen, in the
	// agent's own namespace.
	Listen func(network, address string) (net.Listener, error)
	// ServiceProxyName, if set, serves only the Services labelled
	// service.kubernetes.io/service-proxy-name with it, so that the agent
	// can share a cluster with kube-proxy; empty serves those without the
	// label, as kube-proxy does.
	ServiceProxyName string
	// DrainPeriod is how often Drain runs (kube-proxy checks draining
	// destinations every minute); ReconcilePeriod how often Reconcile
	// repairs drift. Zero means 1 minute and Config.SyncPeriod.
	DrainPeriod, ReconcilePeriod time.Duration
	// Logger gets the agent's lines; nil means slog.Default().
	Logger *slog.Logger
	// Clock is for tests; nil means the real one.
	Clock clock.WithTicker
}

// Agent serves the cluster's Services on one node. Make it with New, then
// call Run.
type Agent struct {
	o      Options
	log    *slog.Logger
	clock  clock.WithTicker
	src    *sources
	runner *runner
	p      *proxier.Proxier
	rep    *reporters
	hooks  hooks
	pend   pending
	// conv holds the objects as last converted, served the services it
	// made as the Proxier was given them; failed says the last sync
	// failed; lastWhole is when the last Sync of a whole State started;
	// hc are the health-check ports of the services served; own are the
	// agent's own reports. The runner's goroutine alone uses them.
	conv      *convert.Converter
	served    map[string]proxier.Service
	failed    bool
	lastWhole time.Time
	hc        healthChecks
	own       *reportLog
	// adopting is set until a sync with Options.Proxier.AdoptKubeProxy
	// succeeds: each sync before previews the take-over first.
	adopting bool
	// afterSync, if set (tests), is called at the end of every sync.
	afterSync func()
	// cachesSynced and firstSyncEnd are when the informers had their
	// first lists and when the first successful sync ended, in Unix
	// nanoseconds (tests).
	cachesSynced, firstSyncEnd atomic.Int64
}

// hooks are the agent's reporters: health, service health and metrics.
// Each may be nil.
type hooks struct {
	queued  func()
	synced  func(hc healthChecks, res *proxier.Result)
	changed func(kind string, obj any)
	node    func(eligible bool)
}

// New checks o and makes an Agent; nothing is started.
func New(o Options) (*Agent, error) {
	switch {
	case o.Config == nil:
		return nil, errors.New("agent: Options.Config is nil")
	case o.NodeName == "":
		return nil, errors.New("agent: Options.NodeName is empty")
	case o.Client == nil:
		return nil, errors.New("agent: Options.Client is nil")
	case o.NewProxier == nil:
		return nil, errors.New("agent: Options.NewProxier is nil")
	}
	if o.DrainPeriod <= 0 {
		o.DrainPeriod = time.Minute
	}
	if o.ReconcilePeriod <= 0 {
		o.ReconcilePeriod = o.Config.SyncPeriod
	}
	a := &Agent{o: o, log: o.Logger, clock: o.Clock, adopting: o.Proxier.AdoptKubeProxy, own: newReportLog()}
	if a.log == nil {
		a.log = slog.Default()
	}
	if a.clock == nil {
		a.clock = clock.RealClock{}
	}
	if a.o.Listen == nil {
		a.o.Listen = net.Listen
	}
	a.runner = newRunner(a.clock, o.Config.MinSyncPeriod, o.Config.SyncPeriod, a.sync)
	a.src = newSources(o.Client, o.NodeName, o.ServiceProxyName, o.Config.ConfigSyncPeriod, a.changed)
	var err error
	if a.rep, err = newReporters(a); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a.hooks = a.rep.hooks()
	return a, nil
}

// changed is called by the informers for every real change.
func (a *Agent) changed(kind string, obj any) {
	if kind == kindNode && a.hooks.node != nil {
		a.hooks.node(health.NodeEligible(a.src.currentNode()))
	}
	a.pend.add(kind, obj)
	if a.hooks.changed != nil {
		a.hooks.changed(kind, obj)
	}
	if a.hooks.queued != nil {
		a.hooks.queued()
	}
	a.runner.Trigger()
}

// Run starts the informers, waits for them and for the agent's Node, makes
// the Proxier, syncs, and keeps the node in sync until ctx ends; then it
// returns nil, leaving the node serving. An error means it could not start.
// With Options.Proxier.AdoptKubeProxy, the first sync previews the
// take-over first (see PreviewTakeover) and logs every change it makes.
func (a *Agent) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	node, err := a.open(ctx)
	if err != nil {
		return err
	}
	if t := a.o.Config.Timeouts; t != (ipvs.Timeouts{}) && a.o.SetTimeouts != nil {
		if err := a.o.SetTimeouts(ctx, t); err != nil {
			return fmt.Errorf("agent: setting the IPVS timeouts (ipvs.tcpTimeout, tcpFinTimeout, udpTimeout): %w", err)
		}
	}
	hcAddrs, err := a.healthCheckAddresses(node)
	if err != nil {
		return err
	}
	if err := a.rep.serve(ctx, hcAddrs); err != nil {
		return err
	}
	a.log.Info("serving", "node", a.o.NodeName, "services", len(a.src.services()), "endpointSlices", len(a.src.slices()))
	a.runner.Trigger()
	done := make(chan struct{})
	go func() { defer close(done); a.runner.Run(ctx) }()
	a.every(ctx, a.o.DrainPeriod, func() {
		if _, err := a.p.Drain(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("drain failed", "err", err)
		}
	})
	a.every(ctx, a.o.ReconcilePeriod, func() {
		rep, err := a.p.Reconcile(ctx)
		switch {
		case errors.Is(err, proxier.ErrSyncNeeded):
			a.runner.Trigger()
		case err != nil && ctx.Err() == nil:
			a.log.Warn("reconcile failed", "err", err)
			a.runner.Trigger()
		case rep != nil && len(rep.Drift) > 0:
			a.log.Info("repaired drift", "report", rep.String())
		}
	})
	<-done
	return nil
}

// open starts the informers, waits for them and for the agent's Node, and
// makes the Proxier; the informers run until ctx ends.
func (a *Agent) open(ctx context.Context) (*corev1.Node, error) {
	if a.p != nil {
		return nil, errors.New("agent: already started (an Agent runs once: Run or PreviewTakeover)")
	}
	a.src.start(ctx)
	if err := a.src.wait(ctx); err != nil {
		return nil, err
	}
	a.cachesSynced.Store(a.clock.Now().UnixNano())
	node, err := a.src.waitNode(ctx, a.o.Config.DetectLocalMode == DetectNodeCIDR)
	if err != nil {
		return nil, err
	}
	if a.hooks.node != nil {
		a.hooks.node(health.NodeEligible(node))
	}
	if err := a.makeProxier(node); err != nil {
		return nil, err
	}
	return node, nil
}

// makeProxier makes the Proxier for node.
func (a *Agent) makeProxier(node *corev1.Node) error {
	cfg, err := a.proxierConfig(node)
	if err != nil {
		return err
	}
	if user := cfg.Observer; user != nil {
		cfg.Observer = proxier.ObserverFunc(func(e proxier.Event) {
			a.rep.metrics.Observe(e)
			user.Observe(e)
		})
	} else {
		cfg.Observer = a.rep.metrics
	}
	if a.p, err = a.o.NewProxier(cfg); err != nil {
		return fmt.Errorf("agent: making the proxier: %w", err)
	}
	return nil
}

// every calls fn every d until ctx ends, in its own goroutine.
func (a *Agent) every(ctx context.Context, d time.Duration, fn func()) {
	t := a.clock.NewTicker(d)
	go func() {
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C():
				fn()
			}
		}
	}()
}
