package lbd

import (
	"net/netip"
	"time"
)

// Key names one real server of one virtual server: the key of its
// health check.
type Key struct {
	VirtualServer string
	Addr          netip.AddrPort // the real server's address and port
}

// Target is what a Checker probes for one Key.
type Target struct {
	Addr  netip.AddrPort // where the check connects
	Check Check
}

// Event is one change of a real server's health.
type Event struct {
	Key Key
	Up  bool
	Err error // the last check's error when down
}

// Checker probes the real servers' health. Replace makes its targets
// exactly those given: a target it had keeps its state when its address
// and type stay, the others start over (not yet checked: up, for the
// daemon). Events go to the notify func its maker was given.
type Checker interface {
	Replace(targets map[Key]Target) error
	Close() error
}

// CheckerMaker makes a Checker that sends each change of a target's
// health to notify and each check's result to observe (for the latency
// histogram), both from its own goroutines.
type CheckerMaker func(notify func(Event), observe func(k Key, latency time.Duration, err error)) (Checker, error)

// targets are the health-check targets of c: every real server whose
// check is not none.
func (c *Config) targets() map[Key]Target {
	out := map[Key]Target{}
	for name, vs := range c.VirtualServers {
		for _, rs := range vs.RealServers {
			ck := vs.checkOf(rs)
			if ck.Type == CheckNone {
				continue
			}
			k := vs.key(name, rs)
			port := ck.Port
			if port == 0 {
				port = int(k.Addr.Port())
			}
			out[k] = Target{Addr: netip.AddrPortFrom(rs.Address, uint16(port)), Check: *ck}
		}
	}
	return out
}

// key is rs's Key in the virtual server name.
func (vs *VirtualServer) key(name string, rs *RealServer) Key {
	port := rs.Port
	if port == 0 {
		port = vs.Port
	}
	return Key{VirtualServer: name, Addr: netip.AddrPortFrom(rs.Address, uint16(port))}
}
