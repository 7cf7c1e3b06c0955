// Package inet names the two things every ipvskit package says about
// traffic: its address family (IPv4 or IPv6) and its transport protocol
// (TCP, UDP, SCTP). The ipvs, ipset, iptables, conntrack and proxier
// packages all use these types under their own names (ipvs.Family is
// inet.Family, conntrack.TCP is inet.TCP, ...), so a value read from one
// package goes to another without conversion:
//
//	k := ipvs.ServiceKey{Family: inet.FamilyOf(vip), Protocol: inet.UDP, Addr: vip, Port: 53}
//	f := conntrack.Filter{Protocol: k.Protocol, Addr: k.Addr, Port: k.Port}
//
// The values are the kernel's own numbers (AF_INET and AF_INET6;
// IPPROTO_TCP, IPPROTO_UDP, IPPROTO_SCTP), and the zero value of each type
// means "none": a family or protocol not given. In text (JSON, YAML, any
// encoding.TextMarshaler user) they are words: "IPv4" and "IPv6", "tcp",
// "udp" and "sctp" as the kernel's tools write them, read in any case.
//
// Package inet also gives bad input its one shape: every package's
// ValidationError is an InputError, whose Fields name each refused value by
// its path, with the value and the reason. One errors.As finds it whichever
// package refused.
//
// And it is the one home of the errors every package shares about the
// kernel: ErrNotSupported, which each package re-exports under its own name
// (ipvs.ErrNotSupported is inet.ErrNotSupported), and
// UnsupportedFeatureError, which names a missing feature and its module
// (proxier.UnsupportedFeatureError is an alias). inet is the home because
// every ipvskit package imports it already and it imports none of them.
package inet
