package ipvsadm

import (
	"strconv"

	"github.com/ipvskit/ipvskit/ipvs"
)

// StartDaemonArgs returns the ipvsadm arguments that start d:
// "--start-daemon master --mcast-interface eth0 --syncid 5", with
// --sync-maxlen, --mcast-group, --mcast-port and --mcast-ttl for the
// fields that are set (a zero field is the kernel's default, which ipvsadm
// leaves out as well).
func StartDaemonArgs(d ipvs.Daemon) []string {
	out := []string{"--start-daemon", d.State.String(), "--mcast-interface", d.Interface, "--syncid", strconv.FormatUint(uint64(d.SyncID), 10)}
	if d.MaxLen != 0 {
		out = append(out, "--sync-maxlen", strconv.Itoa(int(d.MaxLen)))
	}
	if d.Group.IsValid() {
		out = append(out, "--mcast-group", d.Group.String())
	}
	if d.Port != 0 {
		out = append(out, "--mcast-port", strconv.Itoa(int(d.Port)))
	}
	if d.TTL != 0 {
		out = append(out, "--mcast-ttl", strconv.Itoa(int(d.TTL)))
	}
	return out
}

// StopDaemonArgs returns the ipvsadm arguments that stop the daemon of
// role s: "--stop-daemon backup".
func StopDaemonArgs(s ipvs.DaemonState) []string {
	return []string{"--stop-daemon", s.String()}
}
