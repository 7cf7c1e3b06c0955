package proxier

import "slices"

// knobs checks svc's persistence netmask and one-packet scheduling, under
// the path base: a prefix length of its family's range, and OnePacket only
// on a service with a UDP port (it is set on the UDP virtual servers
// alone, so elsewhere it would say nothing).
func (v *validator) knobs(base string, svc *Service) {
	if a := svc.SessionAffinity; a != nil {
		if n := a.IPv4PrefixLen; n < 0 || n > 32 {
			v.add(base+".sessionAffinity.ipv4PrefixLen", n, "out of range 0-32")
		}
		if n := a.IPv6PrefixLen; n < 0 || n > 128 {
			v.add(base+".sessionAffinity.ipv6PrefixLen", n, "out of range 0-128")
		}
	}
	if svc.OnePacket && !slices.ContainsFunc(svc.Ports, func(p Port) bool { return p.Protocol == UDP }) {
		v.add(base+".onePacket", svc.OnePacket, "is set on a service without a UDP port (one-packet scheduling is for UDP)")
	}
}
