package proxier

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// closeTrap is a netfilter back end that fails the test if it is closed.
type closeTrap struct {
	Rules
	t *testing.T
}

func (c closeTrap) Close() error {
	c.t.Error("a Proxier made by New closed one of its Deps")
	return nil
}

// A Proxier made by New closes none of the caller's clients, and works on
// after Close.
func TestCloseOfNewClosesNothing(t *testing.T) {
	p, err := New(nil, Deps{IPVS: ipvstest.New(), Link: dummytest.New(), Sysctls: sysctltest.New(""),
		Rules: map[Family]Rules{IPv4: closeTrap{iptablestest.New(iptables.IPv4), t}}})
	must(t, err)
	for range 2 {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	if _, err := p.Sync(context.Background(), &State{}); err != nil {
		t.Errorf("Sync after Close of a Proxier made by New: %v", err)
	}
}

// Close closes what Open opened once, last opened first, and returns every
// error.
func TestCloseClosesOnceInReverse(t *testing.T) {
	p, err := New(nil, Deps{IPVS: ipvstest.New(), Link: dummytest.New(), Sysctls: sysctltest.New(""),
		Rules: map[Family]Rules{IPv4: iptablestest.New(iptables.IPv4)}})
	must(t, err)
	var order []string
	errA, errC := errors.New("a failed"), errors.New("c failed")
	closer := func(name string, err error) func() error {
		return func() error { order = append(order, name); return err }
	}
	p.closers = closers{closer("a", errA), closer("b", nil), closer("c", errC)}
	err = p.Close()
	if !errors.Is(err, errA) || !errors.Is(err, errC) {
		t.Errorf("Close: %v, want both errors", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
	if want := []string{"c", "b", "a"}; !slices.Equal(order, want) {
		t.Errorf("closed %v, want %v once each", order, want)
	}
}

// Open checks the Config and the namespace before anything else, on every
// system, and a canceled context stops it before it opens anything.
func TestOpenChecksFirst(t *testing.T) {
	ctx := context.Background()
	_, err := Open(ctx, &Config{Families: []Family{5}}, -2)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Open: %v, want a *ValidationError", err)
	}
	var paths []string
	for _, p := range ve.Problems {
		paths = append(paths, p.Path+"="+p.Value)
	}
	if !slices.Contains(paths, "netns=-2") || len(paths) != 2 {
		t.Errorf("problems %v, want the family's and netns=-2", paths)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if p, err := Open(canceled, nil, 0); p != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("Open with a canceled context: %v, %v; want context.Canceled", p, err)
	}
}
