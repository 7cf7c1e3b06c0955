// Command prometheus runs ipvskit as a long-lived node agent and exports what
// it does to Prometheus: it re-reads a proxier.State (JSON or YAML, as
// docs/state-format.md describes and examples/minimal reads) and syncs it
// on a timer and on SIGHUP, drains removed TCP endpoints, deletes stale UDP
// flows, reconciles what others changed on a slower timer, and serves
// /metrics on a loopback address. Run it as root on a kernel with IPVS.
//
//	go run . -listen 127.0.0.1:9099 state.json
//
// The metrics are those of the ipvskit-proxy node agent (package
// github.com/ipvskit/ipvskit/kube/metrics: kube-proxy's names where
// kube-proxy has the metric, ipvskit_ for the rest); that package needs
// nothing from Kubernetes, only client_golang. This example is its own
// module because it depends on github.com/prometheus/client_golang, which
// the library does not.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ipvskit/ipvskit/kube/metrics"
	"github.com/ipvskit/ipvskit/proxier"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9099", "address for /metrics")
	var t timers
	flag.DurationVar(&t.sync, "sync-period", 30*time.Second, "time between syncs")
	flag.DurationVar(&t.drain, "drain-period", 5*time.Second, "time between drain checks")
	flag.DurationVar(&t.reconcile, "reconcile-period", time.Minute, "time between reconciles")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, log, flag.Arg(0), *listen, t); err != nil {
		log.Error("agent failed", "error", err)
		os.Exit(1)
	}
}

// timers are the agent's periods.
type timers struct{ sync, drain, reconcile time.Duration }

func run(ctx context.Context, log *slog.Logger, path, listen string, t timers) error {
	if path == "" {
		return errors.New("usage: prometheus [flags] state.json")
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, &metrics.Config{})
	if err != nil {
		return err
	}
	cfg := &proxier.Config{Observer: m, Logger: log}
	// Every kernel client in this namespace (0), conntrack included, so
	// stale UDP flows are deleted; one Close closes them.
	p, err := proxier.Open(ctx, cfg, 0)
	if err != nil {
		return err
	}
	defer p.Close()

	srv := &http.Server{Addr: listen, Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "error", err)
		}
	}()
	defer srv.Close()

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	syncTick, drainTick, reconcileTick := time.NewTicker(t.sync), time.NewTicker(t.drain), time.NewTicker(t.reconcile)
	defer syncTick.Stop()
	defer drainTick.Stop()
	defer reconcileTick.Stop()
	// Failures are logged and observed by the proxier itself; the next
	// call reads back what it owns and converges.
	sync := func() {
		if st, err := readState(path); err != nil {
			log.Error("reading state", "path", path, "error", err)
		} else {
			_, _ = p.Sync(ctx, st)
		}
	}
	sync()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-syncTick.C:
			sync()
		case <-hup:
			sync()
		case <-drainTick.C:
			_, _ = p.Drain(ctx)
		case <-reconcileTick.C:
			_, _ = p.Reconcile(ctx)
		}
	}
}

func readState(path string) (*proxier.State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	st, err := proxier.DecodeState(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}
