package ipvstest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvsadm"
)

// outcome reduces a call's result to what must agree between the fake and
// the kernel: ok, the errno, or the refused field.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var ve *ipvs.ValidationError
	if errors.As(err, &ve) {
		return "invalid " + ve.Field
	}
	var be *ipvs.BatchError
	if errors.As(err, &be) {
		var s []string
		for _, f := range be.Failed {
			s = append(s, fmt.Sprintf("#%d %s", f.Index, outcome(f.Err)))
		}
		return "batch: " + strings.Join(s, ", ")
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return "other: " + err.Error()
}

// script is one sequence of calls, failing ones included, that must give the
// same outcomes and the same state on the fake and on the kernel.
func script(ctx context.Context, p ipvs.Interface) []string {
	a := netip.MustParseAddr
	web := ipvs.Service{Protocol: ipvs.TCP, Addr: a("198.18.0.1"), Port: 80, Scheduler: "rr"}
	v6 := ipvs.Service{Protocol: ipvs.UDP, Addr: a("2001:db8::1"), Port: 53, Scheduler: "sh", SchedFlags: ipvs.SHPort,
		Persistence: ipvs.Persistence{Timeout: 60 * time.Second, PrefixLen: 64}}
	fw := ipvs.Service{FWMark: 5, Family: ipvs.IPv4, Scheduler: "wlc"}
	missing := ipvs.ServiceKey{Protocol: ipvs.TCP, Addr: a("198.18.0.9"), Port: 80}
	d := func(addr string, w uint32) ipvs.Destination {
		return ipvs.Destination{Addr: a(addr), Port: 8080, Forward: ipvs.Masq, Weight: w}
	}
	var out []string
	rec := func(what string, err error) { out = append(out, what+": "+outcome(err)) }

	rec("add web", p.AddService(ctx, web))
	rec("add web again", p.AddService(ctx, web))
	rec("add v6", p.AddService(ctx, v6))
	rec("add fwmark", p.AddService(ctx, fw))
	rec("add unknown scheduler", p.AddService(ctx, ipvs.Service{Protocol: ipvs.TCP, Addr: a("198.18.0.2"), Port: 80, Scheduler: "nosuch"}))
	rec("add unknown pe", p.AddService(ctx, ipvs.Service{Protocol: ipvs.UDP, Addr: a("198.18.0.2"), Port: 80, Scheduler: "rr", PersistenceEngine: "nope"}))
	rec("add without scheduler", p.AddService(ctx, ipvs.Service{Protocol: ipvs.TCP, Addr: a("198.18.0.2"), Port: 80}))
	rec("update missing", p.UpdateService(ctx, ipvs.Service{Protocol: ipvs.TCP, Addr: a("198.18.0.9"), Port: 80, Scheduler: "rr"}))
	rec("delete missing", p.DeleteService(ctx, missing))
	_, err := p.GetService(ctx, missing)
	rec("get missing", err)
	rec("zero missing", p.ZeroService(ctx, missing))
	rec("dest to missing", p.AddDestination(ctx, missing, d("198.18.1.1", 1)))
	rec("dest 1", p.AddDestination(ctx, web.Key(), d("198.18.1.1", 1)))
	rec("dest 2", p.AddDestination(ctx, web.Key(), d("198.18.1.2", 2)))
	rec("dest 3", p.AddDestination(ctx, web.Key(), d("198.18.1.3", 3)))
	rec("dest 1 again", p.AddDestination(ctx, web.Key(), d("198.18.1.1", 5)))
	rec("dest multicast", p.AddDestination(ctx, web.Key(), d("224.0.0.5", 1)))
	rec("dest v6 masq in v4", p.AddDestination(ctx, web.Key(), ipvs.Destination{Addr: a("2001:db8::5"), Port: 80, Forward: ipvs.Masq, Weight: 1}))
	rec("dest v4 tunnel in v6", p.AddDestination(ctx, v6.Key(), ipvs.Destination{Addr: a("198.18.1.4"), Port: 53, Forward: ipvs.Tunnel, Weight: 1, TunnelType: ipvs.GUE, TunnelPort: 6080}))
	rec("dest thresholds", p.AddDestination(ctx, v6.Key(), ipvs.Destination{Addr: a("2001:db8::2"), Port: 53, Forward: ipvs.Masq, Weight: 4, UpperThreshold: 100, LowerThreshold: 10}))
	rec("dest bad thresholds", p.AddDestination(ctx, v6.Key(), ipvs.Destination{Addr: a("2001:db8::3"), Port: 53, Forward: ipvs.Masq, UpperThreshold: 1, LowerThreshold: 2}))
	rec("update dest 2", p.UpdateDestination(ctx, web.Key(), d("198.18.1.2", 20)))
	rec("update missing dest", p.UpdateDestination(ctx, web.Key(), d("198.18.1.9", 1)))
	rec("delete dest 3", p.DeleteDestination(ctx, web.Key(), d("198.18.1.3", 0).Key()))
	rec("delete dest 3 again", p.DeleteDestination(ctx, web.Key(), d("198.18.1.3", 0).Key()))
	rec("daemon with mixed family", p.StartDaemon(ctx, ipvs.Daemon{State: ipvs.Backup, Interface: "lo", SyncID: 1}))
	rec("edit web", p.UpdateService(ctx, ipvs.Service{Protocol: ipvs.TCP, Addr: a("198.18.0.1"), Port: 80, Scheduler: "wrr",
		Persistence: ipvs.Persistence{Timeout: 30 * time.Second, PrefixLen: 24}}))

	var b ipvs.Batch
	b.AddDestination(fw.Key(), ipvs.Destination{Addr: a("198.18.2.1"), Forward: ipvs.DirectRoute, Weight: 1})
	b.AddDestination(fw.Key(), ipvs.Destination{Addr: a("198.18.2.1"), Forward: ipvs.DirectRoute, Weight: 1}) // EEXIST
	b.DeleteService(missing)                                                                                  // ESRCH
	b.AddDestination(fw.Key(), ipvs.Destination{Addr: a("198.18.2.2"), Forward: ipvs.DirectRoute, Weight: 2})
	rec("batch", p.Apply(ctx, &b))

	rec("set timeouts", p.SetTimeouts(ctx, ipvs.Timeouts{TCP: 600 * time.Second, UDP: 30 * time.Second}))
	to, err := p.Timeouts(ctx)
	rec(fmt.Sprintf("timeouts %v %v %v", to.TCP, to.TCPFin, to.UDP), err)
	rec("stop daemon not running", p.StopDaemon(ctx, ipvs.Master))

	// Destinations in the kernel's order (newest first).
	ds, err := p.Destinations(ctx, web.Key())
	var names []string
	for _, x := range ds {
		names = append(names, fmt.Sprintf("%v w%d", x.Key(), x.Weight))
	}
	rec("web destinations ["+strings.Join(names, ", ")+"]", err)
	ds, err = p.Destinations(ctx, missing)
	rec(fmt.Sprintf("destinations of missing: %d", len(ds)), err)

	snap, err := p.Snapshot(ctx)
	rec("snapshot", err)
	text, err := ipvsadm.MarshalSnapshot(snap)
	rec("table:\n"+string(text), err)

	rec("delete v6", p.DeleteService(ctx, v6.Key()))
	rec("daemon", p.StartDaemon(ctx, ipvs.Daemon{State: ipvs.Backup, Interface: "lo", SyncID: 1}))
	rec("daemon again", p.StartDaemon(ctx, ipvs.Daemon{State: ipvs.Backup, Interface: "lo", SyncID: 2}))
	dms, err := p.Daemons(ctx)
	var dn []string
	for _, x := range dms {
		dn = append(dn, fmt.Sprintf("%v %s %d", x.State, x.Interface, x.SyncID))
	}
	rec("daemons ["+strings.Join(dn, ", ")+"]", err)
	rec("stop daemon", p.StopDaemon(ctx, ipvs.Backup))
	rec("flush", p.Flush(ctx))
	svcs, err := p.Services(ctx)
	rec(fmt.Sprintf("services after flush: %d", len(svcs)), err)
	return out
}

func TestIntegrationFakeMatchesKernel(t *testing.T) {
	ns := testutil.NewNetNS(t)
	testutil.RequireIPVS(t, ns)
	c, err := ipvs.New(&ipvs.Config{NetNS: ns.Handle()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	kernel := script(ctx, c)
	fake := script(ctx, New())
	if !slices.Equal(kernel, fake) {
		var b strings.Builder
		for i := 0; i < max(len(kernel), len(fake)); i++ {
			var k, f string
			if i < len(kernel) {
				k = kernel[i]
			}
			if i < len(fake) {
				f = fake[i]
			}
			mark := "  "
			if k != f {
				mark = "! "
			}
			fmt.Fprintf(&b, "%skernel: %s\n%s  fake: %s\n", mark, k, mark, f)
		}
		t.Fatalf("the fake and the kernel disagree:\n%s", b.String())
	}
}

// The script itself runs on the fake alone everywhere, so a change that
// breaks the fake shows without the VM.
func TestFakeScript(t *testing.T) {
	out := script(context.Background(), New())
	for _, want := range []string{
		"add web again: file exists",
		"update missing: no such process",
		"dest 1 again: file exists",
		"update missing dest: no such file or directory",
		"dest multicast: invalid argument",
		"dest bad thresholds: invalid Destination.LowerThreshold",
		"batch: batch: #1 file exists, #2 no such process",
		"daemon with mixed family: invalid argument",
		"daemon again: file exists",
		"stop daemon not running: no such process",
		"destinations of missing: 0: ok",
	} {
		if !slices.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, strings.Join(out, "\n"))
		}
	}
}
