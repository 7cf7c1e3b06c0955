package ipvstest

import (
	"context"
	"math"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ipvskit/ipvskit/ipvs"
)

// Timeouts returns the connection timeouts (the kernel's defaults until set).
func (f *Fake) Timeouts(ctx context.Context) (ipvs.Timeouts, error) {
	if err := ctxErr(ctx, "get timeouts", ""); err != nil {
		return ipvs.Timeouts{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.timeouts, nil
}

// SetTimeouts sets the non-zero timeouts of t.
func (f *Fake) SetTimeouts(ctx context.Context, t ipvs.Timeouts) error {
	for _, v := range []struct {
		name string
		d    time.Duration
	}{{"Timeouts.TCP", t.TCP}, {"Timeouts.TCPFin", t.TCPFin}, {"Timeouts.UDP", t.UDP}} {
		if v.d < 0 || v.d%time.Second != 0 || v.d/time.Second > math.MaxInt32 {
			return &ipvs.Error{Op: "set timeouts", Err: &ipvs.ValidationError{Field: v.name, Value: v.d, Reason: "want whole seconds from 0 to 2^31-1"}}
		}
	}
	if err := ctxErr(ctx, "set timeouts", ""); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.TCP != 0 {
		f.timeouts.TCP = t.TCP
	}
	if t.TCPFin != 0 {
		f.timeouts.TCPFin = t.TCPFin
	}
	if t.UDP != 0 {
		f.timeouts.UDP = t.UDP
	}
	return nil
}

// Info returns IPVS version 1.2.1 and the default connection table size
// (4096), as a stock kernel does.
func (f *Fake) Info(ctx context.Context) (ipvs.Info, error) {
	if err := ctxErr(ctx, "get info", ""); err != nil {
		return ipvs.Info{}, err
	}
	return ipvs.Info{Version: 0x010201, ConnTableSize: 4096}, nil
}

// Daemons returns the running sync daemons, master first.
func (f *Fake) Daemons(ctx context.Context) ([]ipvs.Daemon, error) {
	if err := ctxErr(ctx, "list sync daemons", ""); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.daemons)
	slices.SortFunc(out, func(a, b ipvs.Daemon) int { return int(a.State) - int(b.State) })
	return out, nil
}

// StartDaemon starts a sync daemon: EEXIST if one runs in that role, EINVAL
// while any service has a destination of another address family. Unset
// fields read back with the kernel's defaults (group 224.0.0.81, port 8848,
// TTL 1, message length 1472 for an IPv4 group, 1452 for IPv6).
func (f *Fake) StartDaemon(ctx context.Context, d ipvs.Daemon) error {
	obj := d.State.String() + " sync daemon"
	if err := validateDaemon(d); err != nil {
		return &ipvs.Error{Op: "start", Object: obj, Err: err}
	}
	if err := ctxErr(ctx, "start", obj); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mixed > 0 {
		return kernelErr("start", obj, syscall.EINVAL)
	}
	if slices.ContainsFunc(f.daemons, func(x ipvs.Daemon) bool { return x.State == d.State }) {
		return kernelErr("start", obj, syscall.EEXIST)
	}
	if !d.Group.IsValid() {
		d.Group = netip.AddrFrom4([4]byte{224, 0, 0, 81})
	}
	if d.Port == 0 {
		d.Port = 8848
	}
	if d.TTL == 0 {
		d.TTL = 1
	}
	if d.MaxLen == 0 {
		d.MaxLen = 1500 - 20 - 8
		if d.Group.Is6() {
			d.MaxLen = 1500 - 40 - 8
		}
	}
	f.daemons = append(f.daemons, d)
	return nil
}

// StopDaemon stops the sync daemon of the given role: ESRCH if none runs.
func (f *Fake) StopDaemon(ctx context.Context, state ipvs.DaemonState) error {
	obj := state.String() + " sync daemon"
	if state != ipvs.Master && state != ipvs.Backup {
		return &ipvs.Error{Op: "stop", Object: obj, Err: &ipvs.ValidationError{Field: "state", Value: state, Reason: "want Master or Backup"}}
	}
	if err := ctxErr(ctx, "stop", obj); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.daemons, func(x ipvs.Daemon) bool { return x.State == state })
	if i < 0 {
		return kernelErr("stop", obj, syscall.ESRCH)
	}
	f.daemons = slices.Delete(f.daemons, i, i+1)
	return nil
}

// validateDaemon repeats the Client's check of a daemon to start (ipvs
// keeps its own unexported).
func validateDaemon(d ipvs.Daemon) error {
	inv := func(field string, v any, reason string) error {
		return &ipvs.ValidationError{Field: field, Value: v, Reason: reason}
	}
	switch {
	case d.State != ipvs.Master && d.State != ipvs.Backup:
		return inv("Daemon.State", d.State, "want Master or Backup")
	case d.Interface == "":
		return inv("Daemon.Interface", `""`, "required")
	case len(d.Interface) > 15:
		return inv("Daemon.Interface", d.Interface, "longer than 15 bytes")
	case strings.IndexByte(d.Interface, 0) >= 0:
		return inv("Daemon.Interface", d.Interface, "contains a NUL byte")
	case d.Group.IsValid() && (d.Group.Zone() != "" || d.Group.Is4In6() || !d.Group.IsMulticast()):
		return inv("Daemon.Group", d.Group, "not a multicast address")
	}
	return nil
}
