package ipvs

import (
	"fmt"
	"net/netip"
)

// DaemonState is the role of a connection-sync daemon
// (IP_VS_STATE_*, include/uapi/linux/ip_vs.h lines 34-36).
type DaemonState uint32

// Sync daemon roles.
const (
	Master DaemonState = 1 // IP_VS_STATE_MASTER: sends connection state
	Backup DaemonState = 2 // IP_VS_STATE_BACKUP: receives it
)

func (s DaemonState) String() string {
	switch s {
	case Master:
		return "master"
	case Backup:
		return "backup"
	}
	return fmt.Sprintf("state(%d)", uint32(s))
}

// Daemon is a connection-synchronisation daemon (ipvsadm --start-daemon).
// One master and one backup may run per network namespace.
type Daemon struct {
	State DaemonState
	// Interface is the multicast interface's name (required, < 16 bytes).
	Interface string
	// SyncID is the sync ID (0-255 on the wire of old kernels).
	SyncID uint32
	// MaxLen is the UDP payload size of sync messages; 0 means the kernel's
	// default (derived from the interface MTU).
	MaxLen uint16
	// Group is the multicast group (IPv4 or IPv6); the zero Addr means the
	// kernel's default 224.0.0.81.
	Group netip.Addr
	// Port is the multicast port; 0 means the default 8848.
	Port uint16
	// TTL is the multicast TTL; 0 means the default 1.
	TTL uint8
}
