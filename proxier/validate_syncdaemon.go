package proxier

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/ipvskit/ipvskit/ipvs"
)

// The most a sync message may hold: the kernel's master sends at most
// 1500-byte packets, less the IP and UDP headers of its group's family; a
// backup takes at least 1024-byte messages. A length outside is clamped by
// the kernel, and would read back as drift.
const (
	syncMaxLen4      = 1500 - 20 - 8
	syncMaxLen6      = 1500 - 40 - 8
	syncMinLenBackup = 1024
)

// syncDaemons checks Config.SyncDaemons: at most one master and one backup,
// each with a valid interface name, a sync ID of one byte, a message length
// the kernel keeps as it is, and a multicast group.
func (v *validator) syncDaemons(ds []SyncDaemon) {
	seen := map[ipvs.DaemonState]string{}
	for i, d := range ds {
		p := fmt.Sprintf("config.syncDaemons[%d]", i)
		switch {
		case d.State != ipvs.Master && d.State != ipvs.Backup:
			v.add(p+".state", d.State, "is not Master or Backup")
		case seen[d.State] != "":
			v.add(p+".state", d.State, "is configured already at %s (the kernel runs one master and one backup)", seen[d.State])
		default:
			seen[d.State] = p
		}
		if reason := badIfName(d.Interface); reason != "" {
			v.add(p+".interface", quote(d.Interface), "%s", reason)
		}
		if d.SyncID > 255 {
			v.add(p+".syncID", d.SyncID, "out of range 0-255 (a sync message carries it in one byte)")
		}
		v.syncGroup(p, d)
	}
}

// syncGroup checks a daemon's group and, in its family, its message length.
func (v *validator) syncGroup(p string, d SyncDaemon) {
	max := syncMaxLen4
	if g := d.Group; g.IsValid() {
		switch {
		case g.Is4In6() || g.Zone() != "":
			v.add(p+".group", g, "is not a plain IPv4 or IPv6 address (no zone, no IPv4-mapped form)")
		case !g.IsMulticast():
			v.add(p+".group", g, "is not a multicast address")
		}
		if g.Is6() && !g.Is4In6() {
			max = syncMaxLen6
		}
	}
	min := 1
	if d.State == ipvs.Backup {
		min = syncMinLenBackup
	}
	if d.MaxLen != 0 && (int(d.MaxLen) < min || int(d.MaxLen) > max) {
		v.add(p+".maxLen", d.MaxLen, "out of range %d-%d for a %v with this group's family (0 is the kernel's default, from the interface's MTU)", min, max, d.State)
	}
}

// badIfName says what is wrong with a network interface name, as the
// kernel checks one (dev_valid_name), or "".
func badIfName(n string) string {
	switch {
	case n == "":
		return "is required (the interface the sync messages use)"
	case len(n) > 15:
		return "is longer than 15 bytes"
	case n == "." || n == "..":
		return "is not an interface name"
	case strings.ContainsAny(n, "/:\x00") || strings.IndexFunc(n, unicode.IsSpace) >= 0:
		return "contains '/', ':', a NUL byte or a space"
	}
	return ""
}
