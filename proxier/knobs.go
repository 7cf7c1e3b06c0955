package proxier

import "github.com/ipvskit/ipvskit/inet"

// The service knobs of IPVS beside the scheduler: the persistence netmask
// (SessionAffinity.IPv4PrefixLen, IPv6PrefixLen) and one-packet scheduling
// (Service.OnePacket). validate_knobs.go checks them.

// persistencePrefix is a's prefix length for virtual servers of family f,
// as the kernel reads it back: the whole address length (32, 128) is 0.
func persistencePrefix(a *SessionAffinity, f inet.Family) uint8 {
	n, full := a.IPv4PrefixLen, 32
	if f == inet.IPv6 {
		n, full = a.IPv6PrefixLen, 128
	}
	if n <= 0 || n >= full {
		return 0
	}
	return uint8(n)
}
