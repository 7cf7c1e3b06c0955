package ipvs

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/internal/nsfd/nsfdtest"
	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

func TestIntegrationNewReportsMissingIPVS(t *testing.T) {
	ns := testutil.NewNetNS(t)
	var statErr error
	ns.Do(t, func() { _, statErr = os.Stat("/proc/thread-self/net/ip_vs") })
	c, err := New(&Config{NetNS: ns.Handle()})
	if statErr != nil {
		// No IPVS in this kernel: New must say so, naming the module.
		if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "ip_vs") {
			t.Fatalf("New without IPVS: err = %v, want ErrNotSupported naming ip_vs", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("New with IPVS loaded: %v", err)
	}
	c.Close()
}

func TestIntegrationServiceErrors(t *testing.T) {
	c, ns := newTestClient(t)
	ctx := t.Context()
	svc := Service{Protocol: TCP, Addr: mustAddr("198.18.0.1"), Port: 80, Scheduler: "rr"}
	dest := Destination{Addr: mustAddr("198.18.1.1"), Port: 80, Weight: 1}

	// Refused before sending: nothing reaches the kernel.
	bad := svc
	bad.Scheduler = ""
	err := c.AddService(ctx, bad)
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "Service.Scheduler" || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("empty scheduler: err = %v, want a ValidationError on Service.Scheduler wrapping EINVAL", err)
	}
	if got := saved(t, ns); len(got) != 0 {
		t.Fatalf("a refused service reached the kernel: %q", got)
	}

	if err := c.AddService(ctx, svc); err != nil {
		t.Fatal(err)
	}
	err = c.AddService(ctx, svc)
	var e *Error
	if !errors.Is(err, fs.ErrExist) || !errors.As(err, &e) || e.Op != "add service" || e.Object != "tcp 198.18.0.1:80" {
		t.Fatalf("duplicate service: err = %#v, want *Error{add service, tcp 198.18.0.1:80} wrapping EEXIST", err)
	}
	missing := ServiceKey{Protocol: TCP, Addr: mustAddr("198.18.0.2"), Port: 80}
	for name, err := range map[string]error{
		"delete missing service":      c.DeleteService(ctx, missing),
		"update missing service":      c.UpdateService(ctx, Service{Protocol: TCP, Addr: mustAddr("198.18.0.2"), Port: 80, Scheduler: "rr"}),
		"get missing service":         func() error { _, err := c.GetService(ctx, missing); return err }(),
		"add dest to missing service": c.AddDestination(ctx, missing, dest),
		"delete missing destination":  c.DeleteDestination(ctx, svc.Key(), dest.Key()),
		"update missing destination":  c.UpdateDestination(ctx, svc.Key(), dest),
		"zero missing service":        c.ZeroService(ctx, missing),
		"stop a daemon not running":   c.StopDaemon(ctx, Master),
	} {
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: err = %v, want fs.ErrNotExist", name, err)
		}
	}
	if err := c.AddDestination(ctx, svc.Key(), dest); err != nil {
		t.Fatal(err)
	}
	if err := c.AddDestination(ctx, svc.Key(), dest); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("duplicate destination: err = %v, want fs.ErrExist", err)
	}
	// A missing service has no destinations, as in the kernel.
	if ds, err := c.Destinations(ctx, missing); err != nil || len(ds) != 0 {
		t.Fatalf("destinations of a missing service: %v, %v; want none, nil", ds, err)
	}
}

func TestIntegrationUpdateInPlaceAndDelete(t *testing.T) {
	c, ns := newTestClient(t)
	ctx := t.Context()
	svc := Service{Protocol: TCP, Addr: mustAddr("198.18.0.1"), Port: 80, Scheduler: "rr"}
	d := Destination{Addr: mustAddr("198.18.1.1"), Port: 8080, Weight: 1}
	if err := c.AddService(ctx, svc); err != nil {
		t.Fatal(err)
	}
	if err := c.AddDestination(ctx, svc.Key(), d); err != nil {
		t.Fatal(err)
	}
	svc.Scheduler, svc.Persistence = "wlc", Persistence{Timeout: 120 * time.Second, PrefixLen: 16}
	if err := c.UpdateService(ctx, svc); err != nil {
		t.Fatal(err)
	}
	d.Weight, d.UpperThreshold, d.LowerThreshold = 7, 100, 10
	if err := c.UpdateDestination(ctx, svc.Key(), d); err != nil {
		t.Fatal(err)
	}
	diffLines(t, "ipvsadm -Sn", []string{
		"-A -t 198.18.0.1:80 -s wlc -p 120 -M 255.255.0.0",
		"-a -t 198.18.0.1:80 -r 198.18.1.1:8080 -m -w 7",
	}, saved(t, ns))
	// ipvsadm -Sn omits thresholds; ipvsadm -Ln --thresholds shows them.
	if u, l := thresholds(t, ns, "198.18.1.1:8080"); u != "100" || l != "10" {
		t.Fatalf("ipvsadm --thresholds shows %s/%s, want 100/10", u, l)
	}
	// And the client reads thresholds ipvsadm set.
	ns.Exec(t, "ipvsadm", "-e", "-t", "198.18.0.1:80", "-r", "198.18.1.1:8080", "-m", "-w", "3", "-x", "200", "-y", "20")
	ds, err := c.Destinations(ctx, svc.Key())
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Weight != 3 || ds[0].UpperThreshold != 200 || ds[0].LowerThreshold != 20 {
		t.Fatalf("destinations after ipvsadm -e: %+v", ds)
	}
	if err := c.DeleteDestination(ctx, svc.Key(), d.Key()); err != nil {
		t.Fatal(err)
	}
	diffLines(t, "ipvsadm -Sn", []string{"-A -t 198.18.0.1:80 -s wlc -p 120 -M 255.255.0.0"}, saved(t, ns))
	if err := c.DeleteService(ctx, svc.Key()); err != nil {
		t.Fatal(err)
	}
	if got := saved(t, ns); len(got) != 0 {
		t.Fatalf("after delete, ipvsadm -Sn shows %q", got)
	}
}

// thresholds returns the Uthreshold and Lthreshold columns of ipvsadm
// -Ln --thresholds for the destination dest ("addr:port").
func thresholds(t *testing.T, ns *testutil.NetNS, dest string) (string, string) {
	t.Helper()
	out := ns.Exec(t, "ipvsadm", "-Ln", "--thresholds")
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] == "->" && f[1] == dest {
			return f[2], f[3]
		}
	}
	t.Fatalf("no %s in ipvsadm -Ln --thresholds:\n%s", dest, out)
	return "", ""
}

func TestIntegrationTimeoutsAndInfo(t *testing.T) {
	c, ns := newTestClient(t)
	ctx := t.Context()
	want := Timeouts{TCP: 900 * time.Second, TCPFin: 100 * time.Second, UDP: 250 * time.Second}
	if err := c.SetTimeouts(ctx, want); err != nil {
		t.Fatal(err)
	}
	if out := ns.Exec(t, "ipvsadm", "-Ln", "--timeout"); !strings.Contains(out, "Timeout (tcp tcpfin udp): 900 100 250") {
		t.Fatalf("ipvsadm --timeout shows %q", out)
	}
	// Zero fields are left alone.
	if err := c.SetTimeouts(ctx, Timeouts{UDP: 33 * time.Second}); err != nil {
		t.Fatal(err)
	}
	ns.Exec(t, "ipvsadm", "--set", "0", "77", "0")
	got, err := c.Timeouts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w := (Timeouts{TCP: 900 * time.Second, TCPFin: 77 * time.Second, UDP: 33 * time.Second}); got != w {
		t.Fatalf("timeouts = %+v, want %+v", got, w)
	}
	if err := c.SetTimeouts(ctx, Timeouts{TCP: 1500 * time.Millisecond}); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("fractional timeout: err = %v, want EINVAL", err)
	}

	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head := strings.SplitN(ns.Exec(t, "ipvsadm", "-Ln"), "\n", 2)[0]
	if want := "IP Virtual Server version " + info.Version.String() + " (size=" + strconv.Itoa(int(info.ConnTableSize)) + ")"; head != want {
		t.Fatalf("ipvsadm -Ln says %q, the client %q", head, want)
	}
}

func TestIntegrationSyncDaemon(t *testing.T) {
	c, ns := newTestClient(t)
	ctx := t.Context()
	ns.Exec(t, "ip", "link", "add", "vs0", "type", "veth", "peer", "name", "vs1")
	ns.Exec(t, "ip", "link", "set", "vs0", "up")
	ns.Exec(t, "ip", "link", "set", "vs1", "up")

	if err := c.StartDaemon(ctx, Daemon{State: Master, Interface: "vs0", SyncID: 5, Port: 8850, TTL: 2}); err != nil {
		t.Fatal(err)
	}
	out := ns.Exec(t, "ipvsadm", "-Ln", "--daemon")
	if !strings.Contains(out, "master sync daemon (mcast=vs0, syncid=5") || !strings.Contains(out, "port=8850, ttl=2") {
		t.Fatalf("ipvsadm --daemon shows %q", out)
	}
	if err := c.StartDaemon(ctx, Daemon{State: Master, Interface: "vs0", SyncID: 6}); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second master: err = %v, want fs.ErrExist", err)
	}
	ns.Exec(t, "ipvsadm", "--start-daemon", "backup", "--mcast-interface", "vs1", "--syncid", "9")
	ds, err := c.Daemons(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byState := map[DaemonState]Daemon{}
	for _, d := range ds {
		byState[d.State] = d
	}
	if m := byState[Master]; len(ds) != 2 || m.Interface != "vs0" || m.SyncID != 5 || m.Port != 8850 || m.TTL != 2 {
		t.Fatalf("daemons = %+v", ds)
	}
	if b := byState[Backup]; b.Interface != "vs1" || b.SyncID != 9 {
		t.Fatalf("backup daemon = %+v", b)
	}
	if err := c.StopDaemon(ctx, Master); err != nil {
		t.Fatal(err)
	}
	if err := c.StopDaemon(ctx, Backup); err != nil {
		t.Fatal(err)
	}
	if out := strings.TrimSpace(ns.Exec(t, "ipvsadm", "-Ln", "--daemon")); out != "" {
		t.Fatalf("after stop, ipvsadm --daemon shows %q", out)
	}
	if ds, err := c.Daemons(ctx); err != nil || len(ds) != 0 {
		t.Fatalf("after stop, Daemons = %+v, %v", ds, err)
	}
}

func TestIntegrationFlush(t *testing.T) {
	c, ns := newTestClient(t)
	ipvsadmRestore(t, ns, crossCases[0].lines...)
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := saved(t, ns); len(got) != 0 {
		t.Fatalf("after Flush, ipvsadm -Sn shows %q", got)
	}
}

// A stop right after a start must return, whether or not the daemon's
// thread has run yet: the kernel sends no ack at all in the latter case
// (kthread_stop's -EINTR reaches netlink, which then skips the ack), and
// a client waiting for it would hang. Seen under emulation.
func TestIntegrationStopDaemonRightAfterStart(t *testing.T) {
	c, _ := newTestClient(t)
	for i := range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := c.StartDaemon(ctx, Daemon{State: Backup, Interface: "lo", SyncID: uint32(i)}); err != nil {
			cancel()
			t.Fatalf("round %d: start: %v", i, err)
		}
		if err := c.StopDaemon(ctx, Backup); err != nil {
			cancel()
			t.Fatalf("round %d: stop: %v", i, err)
		}
		ds, err := c.Daemons(ctx)
		cancel()
		if err != nil || len(ds) != 0 {
			t.Fatalf("round %d: after stop, Daemons = %+v, %v", i, ds, err)
		}
	}
}

// TestIntegrationNetNSRule checks the documented values of Config.NetNS.
// Another program's service, in both namespaces, is left alone.
func TestIntegrationNetNSRule(t *testing.T) {
	here, there := testutil.NewNetNS(t), testutil.NewNetNS(t)
	testutil.RequireIPVS(t, here)
	const foreign = "-A -t 198.18.9.9:80 -s rr"
	ipvsadmRestore(t, here, foreign)
	ipvsadmRestore(t, there, foreign)
	svc := Service{Protocol: TCP, Addr: netip.MustParseAddr("198.18.0.1"), Port: 80, Scheduler: "wrr"}
	const ours = "-A -t 198.18.0.1:80 -s wrr"
	nsfdtest.Rule(t, here, there,
		func(ns netns.NsHandle) (*Client, error) { return New(&Config{NetNS: ns}) },
		func(t *testing.T, c *Client, in, notIn *testutil.NetNS) {
			if err := c.AddService(t.Context(), svc); err != nil {
				t.Fatal(err)
			}
			diffLines(t, "services where the client works", []string{foreign, ours}, saved(t, in))
			diffLines(t, "services of the other namespace", []string{foreign}, saved(t, notIn))
			if err := c.DeleteService(t.Context(), svc.Key()); err != nil {
				t.Fatal(err)
			}
		},
		func(err error) bool {
			var ve *ValidationError
			return errors.As(err, &ve) && ve.Field == "Config.NetNS"
		})
	diffLines(t, "the foreign service", []string{foreign}, saved(t, here))
	diffLines(t, "the foreign service", []string{foreign}, saved(t, there))
}
