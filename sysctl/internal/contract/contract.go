// Package contract holds the expectations that sysctl.Client (in a fresh
// network namespace) and sysctltest.Fake must both meet. It uses only keys
// every Linux kernel has, so it runs against the build machine's kernel.
package contract

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"syscall"
	"testing"

	"github.com/ipvskit/ipvskit/sysctl"
)

// Sysctls is the method set both implementations share.
type Sysctls interface {
	Get(ctx context.Context, key string) (string, error)
	Set(ctx context.Context, key, value string) error
	Apply(ctx context.Context, p sysctl.Profile) ([]sysctl.Change, error)
	Check(ctx context.Context, p sysctl.Profile) ([]sysctl.Change, error)
}

// World is a fresh namespace (or fake) and an implementation working there.
type World struct {
	S Sysctls
	// Oracle reads a key (a path below /proc/sys) independently of S.
	Oracle func(t *testing.T, key string) string
}

const (
	fwd      = "net/ipv4/ip_forward"
	localnet = "net/ipv4/conf/all/route_localnet"
	ignore   = "net/ipv4/conf/all/arp_ignore"
	announce = "net/ipv4/conf/all/arp_announce"
)

var profile = sysctl.Profile{
	{Key: fwd, Value: "1"},
	{Key: "net.ipv4.conf.all.route_localnet", Value: "1"},
	{Key: ignore, Value: "1"},
	{Key: announce, Value: "2"},
	{Key: "net.ipv4.ip_forward", Value: "1"}, // the same key again, same value
}

// Run runs every expectation as a subtest, each in a world from newWorld.
func Run(t *testing.T, newWorld func(t *testing.T) World) {
	for _, tc := range []struct {
		name string
		f    func(t *testing.T, w World)
	}{
		{"GetAndSetInBothKeyForms", getSet},
		{"RefusedValueIsEINVALAndChangesNothing", badValue},
		{"ApplyReportsChangesThenNothing", applyCheck},
		{"CheckReportsDriftWithoutChanging", checkDrift},
		{"MissingKeyMeansNothingIsWritten", missingKey},
		{"FailedWriteIsRolledBack", rollback},
		{"InvalidInputIsRefusedUpFront", invalid},
		{"CanceledContextChangesNothing", canceled},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, newWorld(t)) })
	}
}

func getSet(t *testing.T, w World) {
	ctx := context.Background()
	if v, err := w.S.Get(ctx, "net.ipv4.ip_forward"); err != nil || v != "0" {
		t.Fatalf("Get ip_forward in a fresh namespace = %q, %v; want 0", v, err)
	}
	if err := w.S.Set(ctx, fwd, "1"); err != nil {
		t.Fatal(err)
	}
	if got := w.Oracle(t, fwd); got != "1" {
		t.Fatalf("after Set, ip_forward reads %q; want 1", got)
	}
	if v, err := w.S.Get(ctx, fwd); err != nil || v != "1" {
		t.Fatalf("Get after Set = %q, %v; want 1", v, err)
	}
}

func badValue(t *testing.T, w World) {
	err := w.S.Set(context.Background(), "net.ipv4.ip_forward", "abc")
	var se *sysctl.Error
	if !errors.Is(err, syscall.EINVAL) || !errors.As(err, &se) || se.Op != "set" || se.Key != fwd || se.Value != "abc" {
		t.Fatalf("Set ip_forward=abc: %v; want a *sysctl.Error{set %s abc} matching EINVAL", err, fwd)
	}
	if got := w.Oracle(t, fwd); got != "0" {
		t.Fatalf("a refused Set changed ip_forward to %q", got)
	}
}

func ch(k, o, n string) sysctl.Change { return sysctl.Change{Key: k, Old: o, New: n} }

func applyCheck(t *testing.T, w World) {
	ctx := context.Background()
	changes, err := w.S.Apply(ctx, profile)
	if err != nil {
		t.Fatal(err)
	}
	want := []sysctl.Change{ch(fwd, "0", "1"), ch(localnet, "0", "1"), ch(ignore, "0", "1"), ch(announce, "0", "2")}
	if !slices.Equal(changes, want) {
		t.Fatalf("Apply = %v; want %v", changes, want)
	}
	for _, c := range want {
		if got := w.Oracle(t, c.Key); got != c.New {
			t.Errorf("after Apply, %s reads %q; want %q", c.Key, got, c.New)
		}
	}
	if changes, err := w.S.Apply(ctx, profile); err != nil || len(changes) != 0 {
		t.Fatalf("second Apply = %v, %v; want no changes", changes, err)
	}
	if drift, err := w.S.Check(ctx, profile); err != nil || len(drift) != 0 {
		t.Fatalf("Check after Apply = %v, %v; want no drift", drift, err)
	}
}

func checkDrift(t *testing.T, w World) {
	ctx := context.Background()
	if err := w.S.Set(ctx, ignore, "1"); err != nil {
		t.Fatal(err)
	}
	drift, err := w.S.Check(ctx, profile)
	if err != nil {
		t.Fatal(err)
	}
	want := []sysctl.Change{ch(fwd, "0", "1"), ch(localnet, "0", "1"), ch(announce, "0", "2")}
	if !slices.Equal(drift, want) {
		t.Fatalf("Check = %v; want %v", drift, want)
	}
	for _, k := range []string{fwd, localnet, announce} {
		if got := w.Oracle(t, k); got != "0" {
			t.Errorf("Check changed %s to %q", k, got)
		}
	}
}

func missingKey(t *testing.T, w World) {
	p := append(slices.Clone(profile), sysctl.Setting{Key: "net/ipv4/conf/nosuch0/arp_ignore", Value: "1"})
	changes, err := w.S.Apply(context.Background(), p)
	var ne *sysctl.NotExistError
	if !errors.As(err, &ne) || ne.Key != "net/ipv4/conf/nosuch0/arp_ignore" || ne.Interface != "nosuch0" || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Apply with a key of a missing interface: %v; want a *NotExistError naming the key and nosuch0", err)
	}
	if errors.Is(err, sysctl.ErrNotSupported) {
		t.Errorf("a missing interface is not a missing kernel feature: %v", err)
	}
	if changes != nil {
		t.Errorf("a refused Apply reports changes: %v", changes)
	}
	if got := w.Oracle(t, fwd); got != "0" {
		t.Fatalf("a refused Apply wrote ip_forward=%q", got)
	}
	if _, err := w.S.Get(context.Background(), "net/ipv4/conf/nosuch0/arp_ignore"); !errors.As(err, &ne) {
		t.Fatalf("Get of a missing key: %v; want a *NotExistError", err)
	}
}

func rollback(t *testing.T, w World) {
	p := sysctl.Profile{{Key: fwd, Value: "1"}, {Key: localnet, Value: "1"}, {Key: ignore, Value: "abc"}}
	changes, err := w.S.Apply(context.Background(), p)
	var se *sysctl.Error
	if !errors.Is(err, syscall.EINVAL) || !errors.As(err, &se) || se.Key != ignore {
		t.Fatalf("Apply with a refused value: %v; want a *sysctl.Error for %s matching EINVAL", err, ignore)
	}
	if changes != nil {
		t.Errorf("a rolled-back Apply reports changes: %v", changes)
	}
	for _, k := range []string{fwd, localnet, ignore} {
		if got := w.Oracle(t, k); got != "0" {
			t.Errorf("after the rollback, %s reads %q; want 0", k, got)
		}
	}
}

func invalid(t *testing.T, w World) {
	ctx := context.Background()
	var ve *sysctl.ValidationError
	if _, err := w.S.Get(ctx, "kernel/hostname"); !errors.As(err, &ve) || ve.Field != "key" || ve.Value != "kernel/hostname" {
		t.Errorf("Get of a key outside net/: %v; want a *ValidationError for key", err)
	}
	if err := w.S.Set(ctx, "net/ipv4/../../kernel/hostname", "x"); !errors.As(err, &ve) || ve.Field != "key" {
		t.Errorf("Set of a key with ..: %v; want a *ValidationError for key", err)
	}
	if err := w.S.Set(ctx, fwd, " "); !errors.As(err, &ve) || ve.Field != "value" {
		t.Errorf("Set of a blank value: %v; want a *ValidationError for value", err)
	}
	p := sysctl.Profile{{Key: fwd, Value: "1"}, {Key: "net.ipv4.ip_forward", Value: "0"}}
	if _, err := w.S.Apply(ctx, p); !errors.As(err, &ve) || ve.Field != "profile[1].Value" {
		t.Errorf("Apply of a key set twice to different values: %v; want a *ValidationError for profile[1].Value", err)
	}
	p = sysctl.Profile{{Key: fwd, Value: "1"}, {Key: "vm/swappiness", Value: "0"}}
	if _, err := w.S.Check(ctx, p); !errors.As(err, &ve) || ve.Field != "profile[1].Key" || ve.Value != "vm/swappiness" {
		t.Errorf("Check with a key outside net/: %v; want a *ValidationError for profile[1].Key", err)
	}
	if got := w.Oracle(t, fwd); got != "0" {
		t.Fatalf("refused calls wrote ip_forward=%q", got)
	}
}

func canceled(t *testing.T, w World) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.S.Set(ctx, fwd, "1"); !errors.Is(err, context.Canceled) {
		t.Errorf("Set with a canceled context: %v; want context.Canceled", err)
	}
	if _, err := w.S.Apply(ctx, profile); !errors.Is(err, context.Canceled) {
		t.Errorf("Apply with a canceled context: %v; want context.Canceled", err)
	}
	for _, k := range []string{fwd, localnet, ignore, announce} {
		if got := w.Oracle(t, k); got != "0" {
			t.Errorf("%s reads %q after canceled calls; want 0", k, got)
		}
	}
}
