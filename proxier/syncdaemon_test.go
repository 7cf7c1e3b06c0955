package proxier

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

var (
	testMaster = SyncDaemon{State: ipvs.Master, Interface: "eth0", SyncID: 3}
	testBackup = SyncDaemon{State: ipvs.Backup, Interface: "eth0", SyncID: 3, Port: 8850}
)

// daemonsOf lists the fake's sync daemons, one line each.
func daemonsOf(t *testing.T, r *rig) string {
	t.Helper()
	ds, err := r.ipvs.Daemons(context.Background())
	must(t, err)
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.State.String() + " " + d.Interface + " id " + itoa(int(d.SyncID)) + " port " + itoa(int(d.Port)) + "\n")
	}
	return b.String()
}

// The first Sync starts the configured daemons, after the services, and
// its plan says so as ipvsadm would; the dry run before it shows the same
// lines; a later Sync touches no daemon.
func TestSyncDaemonsStartAtTheFirstSync(t *testing.T) {
	r := newRig(t, &Config{SyncDaemons: []SyncDaemon{testMaster, testBackup}})
	const lines = "# ipvs: sync daemons (ipvsadm)\n" +
		"ipvsadm --start-daemon master --mcast-interface eth0 --syncid 3\n" +
		"ipvsadm --start-daemon backup --mcast-interface eth0 --syncid 3 --mcast-port 8850\n"
	pl, err := r.p.Plan(ptr(oneService()))
	must(t, err)
	if !strings.HasSuffix(pl.String(), lines) {
		t.Errorf("dry run:\n%s\nwant it to end with:\n%s", pl, lines)
	}
	if got := daemonsOf(t, r); got != "" {
		t.Fatalf("the dry run started %q", got)
	}
	res := r.sync(t, oneService())
	if !strings.HasSuffix(res.Plan.String(), lines) {
		t.Errorf("first sync's plan:\n%s\nwant it to end with:\n%s", res.Plan, lines)
	}
	if got, want := daemonsOf(t, r), "master eth0 id 3 port 8848\nbackup eth0 id 3 port 8850\n"; got != want {
		t.Errorf("daemons:\n%swant:\n%s", got, want)
	}
	calls := r.ipvs.calls
	if res := r.sync(t, oneService()); !res.Plan.Empty() || r.ipvs.calls != calls {
		t.Errorf("a no-op sync: plan\n%s\nIPVS calls %d -> %d", res.Plan, calls, r.ipvs.calls)
	}
	if pl, err := r.p.Plan(ptr(oneService())); err != nil || !pl.Empty() {
		t.Errorf("a dry run once they run: %v\n%s", err, pl)
	}
}

// A daemon already running as configured (an earlier run's) is adopted:
// nothing started, and Cleanup stops it. One of another role is never
// touched.
func TestSyncDaemonRunningAsConfiguredIsAdopted(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, &Config{SyncDaemons: []SyncDaemon{testMaster}})
	must(t, r.ipvs.StartDaemon(ctx, SyncDaemon{State: ipvs.Master, Interface: "eth0", SyncID: 3, Port: 8848, TTL: 1}))
	theirs := SyncDaemon{State: ipvs.Backup, Interface: "eth1", SyncID: 9}
	must(t, r.ipvs.StartDaemon(ctx, theirs))
	res := r.sync(t, oneService())
	if len(res.Plan.DaemonStarts)+len(res.Plan.DaemonStops) != 0 {
		t.Errorf("plan:\n%s", res.Plan)
	}
	rep := r.reconcile(t)
	wantReport(t, rep)
	must(t, r.p.Cleanup(ctx))
	if got, want := daemonsOf(t, r), "backup eth1 id 9 port 8848\n"; got != want {
		t.Errorf("after Cleanup, daemons:\n%swant only the other program's:\n%s", got, want)
	}
}

// A daemon in a configured role with other parameters, which the Proxier
// did not start, is a conflict: the Sync fails before applying anything,
// the daemon stays; once it is gone, the next Sync starts the configured
// one.
func TestSyncDaemonConflict(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, &Config{SyncDaemons: []SyncDaemon{testMaster}})
	must(t, r.ipvs.StartDaemon(ctx, SyncDaemon{State: ipvs.Master, Interface: "eth0", SyncID: 4}))
	_, err := r.p.Sync(ctx, ptr(oneService()))
	var ce *DaemonConflictError
	const msg = "proxier: config.syncDaemons: a master sync daemon the proxier did not start runs (sync ID 4, want 3)"
	if !errors.As(err, &ce) || !errors.Is(err, fs.ErrExist) || err.Error() != msg {
		t.Fatalf("Sync = %v\nwant a *DaemonConflictError %q", err, msg)
	}
	if got := r.ipvs.Dump(); got != "" {
		t.Errorf("a refused Sync applied:\n%s", got)
	}
	if _, err := r.p.Reconcile(ctx); !errors.Is(err, ErrSyncNeeded) {
		t.Errorf("Reconcile after the conflict: %v", err)
	}
	must(t, r.p.Cleanup(ctx)) // not the Proxier's: left
	if got, want := daemonsOf(t, r), "master eth0 id 4 port 8848\n"; got != want {
		t.Fatalf("daemons:\n%swant:\n%s", got, want)
	}
	must(t, r.ipvs.StopDaemon(ctx, ipvs.Master))
	r.sync(t, oneService())
	if got, want := daemonsOf(t, r), "master eth0 id 3 port 8848\n"; got != want {
		t.Errorf("daemons:\n%swant:\n%s", got, want)
	}
}

// Reconcile restarts a daemon that stopped and replaces one whose
// parameters changed, each reported as drift; Cleanup stops both.
func TestReconcileRepairsSyncDaemons(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, &Config{SyncDaemons: []SyncDaemon{testMaster, testBackup}})
	r.sync(t, oneService())
	must(t, r.ipvs.StopDaemon(ctx, ipvs.Master))
	must(t, r.ipvs.StopDaemon(ctx, ipvs.Backup))
	must(t, r.ipvs.StartDaemon(ctx, SyncDaemon{State: ipvs.Backup, Interface: "eth1", SyncID: 3, Port: 8850, TTL: 2}))
	wantReport(t, r.reconcile(t),
		"ipvs: master sync daemon: missing",
		"ipvs: backup sync daemon: interface eth1, want eth0; TTL 2, want 1")
	if got, want := daemonsOf(t, r), "master eth0 id 3 port 8848\nbackup eth0 id 3 port 8850\n"; got != want {
		t.Errorf("after Reconcile, daemons:\n%swant:\n%s", got, want)
	}
	wantReport(t, r.reconcile(t))
	// Changed behind its back and then a failure: the next start replaces
	// it (the role is the Proxier's), rather than calling it a conflict.
	must(t, r.ipvs.StopDaemon(ctx, ipvs.Master))
	must(t, r.ipvs.StartDaemon(ctx, SyncDaemon{State: ipvs.Master, Interface: "eth0", SyncID: 8}))
	r.ipvs.failNext = true
	web := oneService()
	web.Services["web"].Endpoints[0].Weight = 5
	if _, err := r.p.Sync(ctx, &web); err == nil {
		t.Fatal("injected failure not reported")
	}
	res := r.sync(t, web)
	if got, want := strings.Join(append(res.Plan.daemonLines(), ""), "\n"), "ipvsadm --stop-daemon master\nipvsadm --start-daemon master --mcast-interface eth0 --syncid 3\n"; got != want {
		t.Errorf("the sync after the failure, daemons:\n%swant:\n%s", got, want)
	}
	must(t, r.p.Cleanup(ctx))
	if got := daemonsOf(t, r); got != "" {
		t.Errorf("after Cleanup: %q", got)
	}
}

// daemonLines is the daemon lines of a plan.
func (p *Plan) daemonLines() []string {
	var out []string
	for _, l := range strings.Split(p.String(), "\n") {
		if strings.HasPrefix(l, "ipvsadm --") {
			out = append(out, l)
		}
	}
	return out
}

// A start that fails fails the Sync after the services are applied, and
// the next Sync starts the daemon.
func TestSyncDaemonStartFailureIsRetried(t *testing.T) {
	f := &failingDaemons{rig: newRig(t, nil)}
	p, err := New(&Config{SyncDaemons: []SyncDaemon{testMaster}},
		Deps{IPVS: f, Link: dummytest.New(), Sysctls: sysctltest.New(""), Rules: map[Family]Rules{IPv4: &fakeRules{}}})
	must(t, err)
	f.fail = true
	_, err = p.Sync(context.Background(), ptr(oneService()))
	var oe *OpError
	if !errors.As(err, &oe) || oe.Subsystem != SubsystemIPVS || !strings.Contains(err.Error(), "no such device") {
		t.Fatalf("Sync = %v; want an *OpError of ipvs naming the failure", err)
	}
	if f.rig.ipvs.Dump() == "" {
		t.Error("the services were not applied before the daemons")
	}
	f.fail = false
	if _, err := p.Sync(context.Background(), ptr(oneService())); err != nil {
		t.Fatal(err)
	}
	if got, want := daemonsOf(t, f.rig), "master eth0 id 3 port 8848\n"; got != want {
		t.Errorf("daemons:\n%swant:\n%s", got, want)
	}
}

type failingDaemons struct {
	*rig
	fail bool
}

func (f *failingDaemons) Apply(ctx context.Context, b *ipvs.Batch) error {
	return f.rig.ipvs.Apply(ctx, b)
}
func (f *failingDaemons) Services(ctx context.Context) ([]ipvs.ServiceInfo, error) {
	return f.rig.ipvs.Services(ctx)
}
func (f *failingDaemons) Destinations(ctx context.Context, k ipvs.ServiceKey) ([]ipvs.DestinationInfo, error) {
	return f.rig.ipvs.Destinations(ctx, k)
}
func (f *failingDaemons) Daemons(ctx context.Context) ([]ipvs.Daemon, error) {
	return f.rig.ipvs.Daemons(ctx)
}
func (f *failingDaemons) StartDaemon(ctx context.Context, d ipvs.Daemon) error {
	if f.fail {
		return &ipvs.Error{Op: "start", Object: "master sync daemon", Err: errors.New("no such device")}
	}
	return f.rig.ipvs.StartDaemon(ctx, d)
}
func (f *failingDaemons) StopDaemon(ctx context.Context, s ipvs.DaemonState) error {
	return f.rig.ipvs.StopDaemon(ctx, s)
}

// SyncDaemons needs an IPVS client that runs daemons.
func TestSyncDaemonsNeedADaemonClient(t *testing.T) {
	r := newRig(t, nil)
	_, err := New(&Config{SyncDaemons: []SyncDaemon{testMaster}},
		Deps{IPVS: onlyIPVS{r.ipvs}, Link: dummytest.New(), Sysctls: sysctltest.New(""), Rules: map[Family]Rules{IPv4: &fakeRules{}}})
	if err == nil || !strings.Contains(err.Error(), "Config.SyncDaemons needs a Deps.IPVS with Daemons") {
		t.Fatalf("New = %v", err)
	}
}

type onlyIPVS struct{ IPVS }

func TestSyncDaemonsValidation(t *testing.T) {
	g6 := netip.MustParseAddr("ff02::81")
	for _, tc := range []struct {
		d    []SyncDaemon
		want string // the one problem, "" for valid
	}{
		{[]SyncDaemon{testMaster, testBackup}, ""},
		{[]SyncDaemon{{State: ipvs.Backup, Interface: "br-lan.100", SyncID: 255, MaxLen: 1452, Group: g6, Port: 1, TTL: 255}}, ""},
		{[]SyncDaemon{{State: ipvs.Master, Interface: "eth0", MaxLen: 1}}, ""},
		{[]SyncDaemon{{Interface: "eth0"}}, "config.syncDaemons[0].state: state(0) is not Master or Backup"},
		{[]SyncDaemon{testMaster, testMaster}, "config.syncDaemons[1].state: master is configured already at config.syncDaemons[0] (the kernel runs one master and one backup)"},
		{[]SyncDaemon{{State: ipvs.Master}}, `config.syncDaemons[0].interface: "" is required (the interface the sync messages use)`},
		{[]SyncDaemon{{State: ipvs.Master, Interface: "a-very-long-name"}}, `config.syncDaemons[0].interface: "a-very-long-name" is longer than 15 bytes`},
		{[]SyncDaemon{{State: ipvs.Master, Interface: "eth 0"}}, `config.syncDaemons[0].interface: "eth 0" contains '/', ':', a NUL byte or a space`},
		{[]SyncDaemon{{State: ipvs.Master, Interface: ".."}}, `config.syncDaemons[0].interface: ".." is not an interface name`},
		{[]SyncDaemon{{State: ipvs.Master, Interface: "eth0", SyncID: 256}}, "config.syncDaemons[0].syncID: 256 out of range 0-255 (a sync message carries it in one byte)"},
		{[]SyncDaemon{{State: ipvs.Master, Interface: "eth0", Group: a("198.18.0.1")}}, "config.syncDaemons[0].group: 198.18.0.1 is not a multicast address"},
		{[]SyncDaemon{{State: ipvs.Master, Interface: "eth0", Group: netip.MustParseAddr("::ffff:224.0.0.81")}},
			"config.syncDaemons[0].group: ::ffff:224.0.0.81 is not a plain IPv4 or IPv6 address (no zone, no IPv4-mapped form)"},
		{[]SyncDaemon{{State: ipvs.Master, Interface: "eth0", MaxLen: 1473}},
			"config.syncDaemons[0].maxLen: 1473 out of range 1-1472 for a master with this group's family (0 is the kernel's default, from the interface's MTU)"},
		{[]SyncDaemon{{State: ipvs.Master, Interface: "eth0", MaxLen: 1460, Group: g6}},
			"config.syncDaemons[0].maxLen: 1460 out of range 1-1452 for a master with this group's family (0 is the kernel's default, from the interface's MTU)"},
		{[]SyncDaemon{{State: ipvs.Backup, Interface: "eth0", MaxLen: 1000}},
			"config.syncDaemons[0].maxLen: 1000 out of range 1024-1472 for a backup with this group's family (0 is the kernel's default, from the interface's MTU)"},
	} {
		err := (&Config{SyncDaemons: tc.d}).Validate()
		var ve *ValidationError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.d, err)
		case tc.want != "" && (!errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].String() != tc.want):
			t.Errorf("%+v: %v\nwant the one problem %q", tc.d, err, tc.want)
		}
	}
}
