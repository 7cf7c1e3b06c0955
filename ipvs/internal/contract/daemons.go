package contract

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/ipvs"
)

// syncDaemons: a master and a backup start with the parameters given and
// the kernel's defaults for the others, read back alike through the
// implementation and the daemon oracle (ipvsadm -Ln --daemon for the
// kernel); a second daemon of a role is fs.ErrExist, an invalid one a
// *ValidationError and a canceled context context.Canceled, each starting
// nothing; stopping one that does not run is fs.ErrNotExist. Another
// program's virtual services stay as they were throughout.
func syncDaemons(t *testing.T, w World) {
	if w.SyncInterface == nil || w.Daemons == nil {
		t.Skip("this world has no interface for sync daemons")
	}
	ctx := context.Background()
	ifn := w.SyncInterface(t)
	master := ipvs.Daemon{State: ipvs.Master, Interface: ifn, SyncID: 5, Port: 8850, TTL: 2}
	backup := ipvs.Daemon{State: ipvs.Backup, Interface: ifn, SyncID: 7, MaxLen: 1400, Group: netip.MustParseAddr("239.1.2.3")}
	for _, d := range []ipvs.Daemon{master, backup} {
		if err := w.IPVS.StartDaemon(ctx, d); err != nil {
			t.Fatalf("StartDaemon %+v: %v", d, err)
		}
	}
	wantDaemons := []ipvs.Daemon{
		{State: ipvs.Master, Interface: ifn, SyncID: 5, MaxLen: 1472, Group: netip.MustParseAddr("224.0.0.81"), Port: 8850, TTL: 2},
		{State: ipvs.Backup, Interface: ifn, SyncID: 7, MaxLen: 1400, Group: netip.MustParseAddr("239.1.2.3"), Port: 8848, TTL: 1},
	}
	wantRead := func() {
		t.Helper()
		got, err := w.IPVS.Daemons(ctx)
		if err != nil || !slices.Equal(got, wantDaemons) {
			t.Fatalf("Daemons = %+v, %v\nwant %+v", got, err, wantDaemons)
		}
		if got, want := w.Daemons(t), DaemonLines(wantDaemons); got != want {
			t.Fatalf("the daemon oracle:\n%swant:\n%s", got, want)
		}
	}
	wantRead()

	if err := w.IPVS.StartDaemon(ctx, ipvs.Daemon{State: ipvs.Master, Interface: ifn, SyncID: 6}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("a second master: %v; want fs.ErrExist", err)
	}
	var ve *ipvs.ValidationError
	if err := w.IPVS.StartDaemon(ctx, ipvs.Daemon{State: ipvs.Master}); !errors.As(err, &ve) || ve.Field != "Daemon.Interface" {
		t.Errorf("a daemon with no interface: %v; want a *ValidationError naming Daemon.Interface", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.IPVS.StopDaemon(canceled, ipvs.Master); !errors.Is(err, context.Canceled) {
		t.Errorf("StopDaemon with a canceled context: %v", err)
	}
	wantRead()
	want(t, w)

	for _, s := range []ipvs.DaemonState{ipvs.Master, ipvs.Backup} {
		if err := w.IPVS.StopDaemon(ctx, s); err != nil {
			t.Fatalf("StopDaemon %v: %v", s, err)
		}
	}
	if err := w.IPVS.StopDaemon(ctx, ipvs.Master); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stopping a master that does not run: %v; want fs.ErrNotExist", err)
	}
	wantDaemons = nil
	wantRead()
	want(t, w)
}

// DaemonLines renders sync daemons as ipvsadm -Ln --daemon prints them,
// for a World's daemon oracle.
func DaemonLines(ds []ipvs.Daemon) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%v sync daemon (mcast=%s, syncid=%d, maxlen=%d, group=%v, port=%d, ttl=%d)\n",
			d.State, d.Interface, d.SyncID, d.MaxLen, d.Group, d.Port, d.TTL)
	}
	return b.String()
}
