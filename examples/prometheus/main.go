// Command prometheus runs ipvskit as a long-lived node agent and exports what
// it does to Prometheus: it re-reads a proxier.State (JSON, as in
// examples/minimal) and syncs it on a timer and on SIGHUP, and serves
// /metrics on a loopback address. Run it as root on a kernel with IPVS.
//
//	go run . -listen 127.0.0.1:9099 state.json
//
// This example is its own module because it depends on
// github.com/prometheus/client_golang, which the library does not.
package main

import (
	"context"
	"encoding/json"
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

	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/sysctl"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9099", "address for /metrics")
	syncEvery := flag.Duration("sync-period", 30*time.Second, "time between syncs")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, log, flag.Arg(0), *listen, *syncEvery); err != nil {
		log.Error("agent failed", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, path, listen string, syncEvery time.Duration) error {
	if path == "" {
		return errors.New("usage: prometheus [flags] state.json")
	}
	reg := prometheus.NewRegistry()
	cfg := &proxier.Config{Observer: NewMetrics(reg), Logger: log}
	p, closeDeps, err := newProxier(cfg)
	if err != nil {
		return err
	}
	defer closeDeps()

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
	tick := time.NewTicker(syncEvery)
	defer tick.Stop()
	for {
		// A failed sync is logged and observed; the next one repairs it.
		if st, err := readState(path); err != nil {
			log.Error("reading state", "path", path, "error", err)
		} else {
			_, _ = p.Sync(ctx, st)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-hup:
		}
	}
}

func readState(path string) (*proxier.State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st proxier.State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &st, nil
}

// newProxier builds a Proxier over the real clients in the current network
// namespace.
func newProxier(cfg *proxier.Config) (*proxier.Proxier, func(), error) {
	var closers []func() error
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	ipvsc, err := ipvs.New(nil)
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, ipvsc.Close)
	link, err := dummy.New(nil)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	closers = append(closers, link.Close)
	sys, err := sysctl.New(nil)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	closers = append(closers, sys.Close)
	rules, err := iptables.NewNFTables(nil)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	closers = append(closers, rules.Close)
	p, err := proxier.New(cfg, proxier.Deps{IPVS: ipvsc, Link: link, Sysctls: sys,
		Rules: map[proxier.Family]proxier.Rules{proxier.IPv4: rules}})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return p, closeAll, nil
}
