package lbd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netns"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/proxier/proxiertest"
)

// ServeOptions say how Serve runs; nil means the zero ServeOptions.
type ServeOptions struct {
	// NetNS is the node's network namespace (0: the caller's): the
	// Proxier's and the health checks'.
	NetNS netns.NsHandle
	// Logger gets the logs; nil discards them.
	Logger *slog.Logger
	// Registry, if not nil, gets the metrics.
	Registry prometheus.Registerer
	// Reload: each value received reloads the file (SIGHUP).
	Reload <-chan os.Signal
	// Checker makes the health checker; nil is HealthChecker(NetNS, Logger).
	Checker CheckerMaker
	// Options are passed on to New (its Logger, Checker and Metrics are
	// Serve's).
	Options Options
}

// ReadFile reads and loads the configuration file path.
func ReadFile(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := Load(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", path, errString(err))
	}
	return cfg, nil
}

// Serve serves the file path until ctx ends, reloading it on o.Reload,
// and leaves the node serving when it returns.
func Serve(ctx context.Context, path string, o *ServeOptions) error {
	if o == nil {
		o = &ServeOptions{}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg, err := ReadFile(path)
	if err != nil {
		return err
	}
	pc := cfg.ProxierConfig()
	pc.Logger = log
	p, err := proxier.Open(ctx, pc, o.NetNS)
	if err != nil {
		return err
	}
	defer p.Close()
	opts := o.Options
	opts.Logger, opts.Checker = log, o.Checker
	if opts.Checker == nil {
		opts.Checker = HealthChecker(o.NetNS, log)
	}
	if o.Registry != nil {
		if opts.Metrics, err = NewMetrics(o.Registry); err != nil {
			return err
		}
	}
	d, err := New(ctx, p, cfg, &opts)
	if err != nil {
		return err
	}
	if o.Registry != nil {
		stats, err := ipvs.New(&ipvs.Config{NetNS: o.NetNS})
		if err != nil {
			return err
		}
		defer stats.Close()
		if err := RegisterStats(o.Registry, stats, d.Config, log); err != nil {
			return err
		}
	}
	go d.watch(ctx, path, o.Reload, opts.Metrics, log)
	return d.Run(ctx)
}

// watch reloads path on each value of hup until ctx ends: a bad file,
// or one that needs another Proxier (instance, families), is refused and
// the running configuration kept.
func (d *Daemon) watch(ctx context.Context, path string, hup <-chan os.Signal, m *Metrics, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		cfg, err := ReadFile(path)
		if err == nil {
			err = sameProxier(d.Config(), cfg)
		}
		if err != nil {
			log.Error("reload refused; the running configuration is kept", "error", err)
			m.Reloaded("refused")
			continue
		}
		if a := d.Reload(ctx, cfg); a.Err != nil {
			m.Reloaded("failed")
		} else {
			m.Reloaded("success")
		}
	}
}

// sameProxier refuses a configuration whose Proxier differs from the
// running one's.
func sameProxier(old, cfg *Config) error {
	a, b := old.ProxierConfig(), cfg.ProxierConfig()
	if a.Instance != b.Instance || !slices.Equal(a.Families, b.Families) {
		return fmt.Errorf("the instance or the address families changed (%s %v -> %s %v): restart the daemon", a.Instance, a.Families, b.Instance, b.Families)
	}
	if !slices.Equal(a.SyncDaemons, b.SyncDaemons) {
		return fmt.Errorf("the sync daemons changed (%v -> %v): restart the daemon", a.SyncDaemons, b.SyncDaemons)
	}
	return nil
}

// DryRun writes to w the plan of the file path's first sync on an empty
// node, changing nothing (the Proxier syncs proxiertest's fakes).
func DryRun(ctx context.Context, w io.Writer, path string) error {
	cfg, err := ReadFile(path)
	if err != nil {
		return err
	}
	pc := cfg.ProxierConfig()
	p, err := proxier.New(pc, proxiertest.NewFakeDeps(pc).Deps())
	if err != nil {
		return err
	}
	res, err := p.Sync(ctx, cfg.State(nil))
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(w, res.Plan)
	return err
}

// Cleanup removes everything the Proxier of the file path owns in the
// namespace ns.
func Cleanup(ctx context.Context, path string, ns netns.NsHandle) error {
	cfg, err := ReadFile(path)
	if err != nil {
		return err
	}
	p, err := proxier.Open(ctx, cfg.ProxierConfig(), ns)
	if err != nil {
		return err
	}
	defer p.Close()
	return p.Cleanup(ctx)
}
