package lbd

import (
	"net/netip"
	"time"

	"github.com/ipvskit/ipvskit/proxier"
)

// Config is the daemon's configuration file, as Load reads it
// (README.md has its reference).
type Config struct {
	// Instance names the Proxier's kernel objects (proxier.Config.Instance);
	// empty is "ipvskit".
	Instance string
	// SyncDaemons are IPVS's connection-sync daemons the daemon runs
	// (proxier.Config.SyncDaemons: keepalived's lvs_sync_daemon), at most
	// a master and a backup. A reload that changes them is refused: restart
	// the daemon (the Proxier's Config is fixed when it opens).
	SyncDaemons []proxier.SyncDaemon
	// VirtualServers by name: the name is the Service's ID in the
	// Proxier, in logs and in metrics' labels.
	VirtualServers map[string]*VirtualServer
	// lines are the lines of the values read from the file, by path
	// (virtualServers["web"].realServers[0].weight).
	lines map[string]int
}

// VirtualServer is keepalived's virtual_server: a VIP and port (or a
// firewall mark on a VIP's ports), with its real servers.
type VirtualServer struct {
	Address  netip.Addr
	Port     int   // the VIP's port; 0 with FirewallMark and Ports
	Ports    []int // with FirewallMark: the ports let in on the VIP
	Protocol proxier.Protocol
	// FirewallMark, if not 0, makes it a firewall-mark service.
	FirewallMark uint32
	Scheduler    string
	// Persistence, if not nil, is IPVS persistence (keepalived's
	// persistence_timeout and persistence_granularity).
	Persistence *proxier.SessionAffinity
	Forward     proxier.ForwardMethod
	Tunnel      proxier.Tunnel
	OnePacket   bool
	// Check is the real servers' health check unless one gives its own.
	Check *Check
	// Sorry, if set, is the real server used when none is healthy.
	Sorry       *RealServer
	RealServers []*RealServer
}

// RealServer is keepalived's real_server.
type RealServer struct {
	Address netip.Addr
	// Port is the real server's port; 0 means the virtual server's (and
	// must be 0 for a firewall-mark service).
	Port int
	// Weight is 0-65535; 0 keeps it quiesced; absent is 1.
	Weight                         int
	UpperThreshold, LowerThreshold int
	// InhibitOnFailure keeps a failed real server at weight 0 instead of
	// removing it.
	InhibitOnFailure bool
	// Check is its health check; nil means the virtual server's.
	Check *Check
}

// CheckType is the kind of a health check.
type CheckType string

// The check types a file may name.
const (
	CheckNone  CheckType = "none"
	CheckTCP   CheckType = "tcp"
	CheckHTTP  CheckType = "http"
	CheckHTTPS CheckType = "https"
	CheckDNS   CheckType = "dns"
)

// Check is a real server's health check.
type Check struct {
	Type CheckType
	// Port is where the check connects; 0 means the real server's port.
	Port                                     int
	Interval, Timeout, Jitter, RetryInterval time.Duration
	Rise, Fall                               int
	Path, Host, Body                         string // http, https
	Status                                   []int  // http, https; nil is 200
	InsecureSkipVerify                       bool   // https
	DNSName, DNSType                         string // dns
	DNSRCode                                 int    // dns
}

// The defaults of a check's timing.
const (
	DefaultInterval = 5 * time.Second
	DefaultRise     = 1
	DefaultFall     = 1
)
