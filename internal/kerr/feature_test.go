package kerr

import (
	"context"
	"errors"
	"testing"

	"github.com/ipvskit/ipvskit/inet"
)

func TestProbesAskOnceAndKeepOnlyAnswers(t *testing.T) {
	var p Probes
	ctx := context.Background()
	sh := Feature{Name: "IPVS scheduler sh", Module: "ip_vs_sh"}
	twos := Feature{Name: "IPVS scheduler twos", Module: "ip_vs_twos", MinKernel: "6.2"}
	calls := map[string]int{}
	probe := func(f Feature, answer error) func(context.Context) error {
		return func(context.Context) error { calls[f.Name]++; return answer }
	}
	for range 3 {
		if err := p.Run(ctx, sh, probe(sh, nil)); err != nil {
			t.Fatalf("sh: %v", err)
		}
		err := p.Run(ctx, twos, probe(twos, twos.Missing(errors.New("ENOENT"))))
		var u *inet.UnsupportedFeatureError
		if !errors.As(err, &u) || !errors.Is(err, inet.ErrNotSupported) || u.Module != "ip_vs_twos" || u.MinKernel != "6.2" {
			t.Fatalf("twos: %v, want the feature named missing", err)
		}
	}
	if calls[sh.Name] != 1 || calls[twos.Name] != 1 {
		t.Errorf("probes ran %v times, want once each", calls)
	}
	// Other failures are no answer: the next Run asks again.
	flaky := Feature{Name: "flaky"}
	for range 2 {
		if err := p.Run(ctx, flaky, probe(flaky, context.Canceled)); !errors.Is(err, context.Canceled) {
			t.Fatalf("flaky: %v", err)
		}
	}
	if calls["flaky"] != 2 {
		t.Errorf("a failed probe ran %d times, want 2 (not kept)", calls["flaky"])
	}
}

func TestMissingNamesTheFeature(t *testing.T) {
	f := Feature{Name: "dummy links", Module: "dummy"}
	cause := errors.New("operation not supported")
	err := f.Missing(cause)
	if err.Error() != "dummy links: not supported by the kernel (module dummy not loaded): operation not supported" ||
		!errors.Is(err, inet.ErrNotSupported) || !errors.Is(err, cause) {
		t.Errorf("Missing = %v", err)
	}
}

func TestProbesAfterForgetOrADoneContextAskAgainOrFail(t *testing.T) {
	var p Probes
	f := Feature{Name: "dummy links", Module: "dummy"}
	calls := 0
	probe := func(context.Context) error { calls++; return nil }
	ctx, cancel := context.WithCancel(context.Background())
	if err := p.Run(ctx, f, probe); err != nil || calls != 1 {
		t.Fatalf("Run = %v after %d probes", err, calls)
	}
	cancel()
	if err := p.Run(ctx, f, probe); !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("with a done context: %v after %d probes, want context.Canceled without a probe", err, calls)
	}
	p.Forget()
	if err := p.Run(context.Background(), f, probe); err != nil || calls != 2 {
		t.Errorf("after Forget: %v after %d probes, want a second probe", err, calls)
	}
}
