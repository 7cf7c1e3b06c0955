package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/kube/agent"
	"github.com/ipvskit/ipvskit/proxier"
)

// The start-up probe fails with every module the kernel lacks named, and
// passes where nothing is missing; proxier.Preflight's own answer for the same
// namespace is the oracle.
func TestPreflightNamesMissingModules(t *testing.T) {
	ns := testutil.NewNetNS(t)
	ctx := context.Background()
	for _, backend := range []proxier.Backend{proxier.NFTables, proxier.IPTables} {
		pc := &proxier.Config{Backend: backend}
		cfg := agent.DefaultConfig()
		cfg.Scheduler = "sh"
		want := proxier.Preflight(ctx, pc, ns.Handle(), &proxier.PreflightOptions{Schedulers: []string{"sh"}})
		err := preflight(ctx, pc, cfg, ns.Handle())
		if want == nil {
			if err != nil {
				t.Errorf("%v: preflight: %v, want nil as proxier.Preflight", backend, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "kernel preflight") {
			t.Fatalf("%v: preflight: %v, want proxier.Preflight's %v", backend, err, want)
		}
		var named int
		for _, e := range unjoin(want) {
			var missing *proxier.UnsupportedFeatureError
			if errors.As(e, &missing) {
				named++
				if !strings.Contains(err.Error(), "module "+missing.Module+" ") {
					t.Errorf("%v: preflight: %v, does not name %s", backend, err, missing.Module)
				}
			}
		}
		t.Logf("%v: %d missing modules named", backend, named)
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
