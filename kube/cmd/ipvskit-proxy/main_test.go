package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// --dry-run previews a take-over: without --adopt-kube-proxy, or with
// --cleanup, it is refused before anything is opened.
func TestDryRunNeedsAdoption(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, f := range []flags{{dryRun: true}, {dryRun: true, adopt: true, kubeProxyNames: true, cleanup: true}} {
		err := run(context.Background(), f, log, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--dry-run") {
			t.Errorf("run(%+v) = %v, want an error naming --dry-run", f, err)
		}
	}
}
