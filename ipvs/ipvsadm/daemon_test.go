package ipvsadm

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/ipvs"
)

func TestDaemonArgs(t *testing.T) {
	for _, tc := range []struct {
		d    ipvs.Daemon
		want string
	}{
		{ipvs.Daemon{State: ipvs.Master, Interface: "eth0"}, "--start-daemon master --mcast-interface eth0 --syncid 0"},
		{ipvs.Daemon{State: ipvs.Backup, Interface: "br0", SyncID: 7, MaxLen: 1400, Group: netip.MustParseAddr("ff02::81"), Port: 8850, TTL: 2},
			"--start-daemon backup --mcast-interface br0 --syncid 7 --sync-maxlen 1400 --mcast-group ff02::81 --mcast-port 8850 --mcast-ttl 2"},
	} {
		if got := strings.Join(StartDaemonArgs(tc.d), " "); got != tc.want {
			t.Errorf("StartDaemonArgs(%+v) = %q, want %q", tc.d, got, tc.want)
		}
	}
	if got := strings.Join(StopDaemonArgs(ipvs.Backup), " "); got != "--stop-daemon backup" {
		t.Errorf("StopDaemonArgs(Backup) = %q", got)
	}
}
