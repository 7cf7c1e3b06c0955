// Command ipvskit-lb is a health-checked IPVS load balancer: keepalived's
// virtual_server half, on ipvskit's Proxier. See lbd/README.md.
//
//	ipvskit-lb -config /etc/ipvskit-lb.yaml          serve; SIGHUP reloads
//	ipvskit-lb -config lb.yaml -check                validate, print the plan
//	ipvskit-lb -config lb.yaml -cleanup              remove what it owns
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

	"github.com/ipvskit/ipvskit/lbd"
)

func main() {
	path := flag.String("config", "/etc/ipvskit-lb.yaml", "the configuration `file`")
	check := flag.Bool("check", false, "validate the file, print the plan of its first sync on an empty node, and exit (no kernel, no root)")
	cleanup := flag.Bool("cleanup", false, "remove every virtual server, VIP and rule the daemon owns, and exit")
	listen := flag.String("metrics", "127.0.0.1:9110", "`address` for /metrics (empty: none)")
	debug := flag.Bool("debug", false, "log at debug level")
	flag.Parse()
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case *check:
		err = lbd.DryRun(ctx, os.Stdout, *path)
	case *cleanup:
		err = lbd.Cleanup(ctx, *path, 0)
	default:
		err = serve(ctx, log, *path, *listen)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ipvskit-lb:", err)
		os.Exit(1)
	}
}

// serve runs the daemon until SIGTERM or SIGINT, which leave the node
// serving; SIGHUP reloads the file.
func serve(ctx context.Context, log *slog.Logger, path, listen string) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	reg := prometheus.NewRegistry()
	if listen != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Addr: listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics server", "error", err)
			}
		}()
		defer srv.Close()
	}
	return lbd.Serve(ctx, path, &lbd.ServeOptions{Logger: log, Registry: reg, Reload: hup})
}
