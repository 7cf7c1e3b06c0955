package proxier

import "github.com/ipvskit/ipvskit/ipvs"

// ForwardMethod is how IPVS sends a service's packets to its endpoints
// (Service.Forward): the ipvs package's type, so that a value goes to the
// kernel as it is. The Proxier takes three:
//
//   - ipvs.Masq (the zero value): masquerade, IPVS's NAT. The destination
//     address and port are rewritten to the endpoint's, and the reply must
//     come back through the node, which un-NATs it. Any endpoint that the
//     node can route to works; ports may be mapped (TargetPort), and node
//     ports are served. This is kube-proxy's method, and the only one
//     before Forward existed.
//   - ipvs.DirectRoute: direct routing (keepalived's DR, ipvsadm -g). The
//     packet is sent unchanged, VIP and port included, to the endpoint's
//     MAC address: the endpoint must be on a link of the node (same L2,
//     no router between), hold the VIP on a link of its own (lo) without
//     answering ARP for it (arp_ignore=1, arp_announce=2), and reply to
//     the client directly, from the VIP.
//   - ipvs.Tunnel: the packet is sent unchanged inside an IP-in-IP, GUE or
//     GRE packet to the endpoint's address (Service.Tunnel says which);
//     the endpoint, anywhere the node can route to, must decapsulate it
//     (an ipip, fou/GUE or gre device, up), hold the VIP and reply to the
//     client directly, from the VIP.
//
// With DirectRoute and Tunnel the endpoint sees the client's own address
// and its replies do not pass the node: there is nothing to un-NAT, so the
// Proxier marks none of the service's traffic for masquerade (the access
// filter of the VIPs and LoadBalancerSourceRanges still apply). The
// destination keeps the VIP as its address, so no port can be mapped: a
// Port whose TargetPort, or an endpoint's Ports entry, differs from Port
// is refused, and so is a NodePort (a node port is a port mapping from the
// node's address to the VIP's port: the endpoint would have to serve the
// node's address at the node port). The traffic policies keep choosing
// endpoints as for Masq (Local: only this node's); the client's address is
// kept under either. A client on the node itself cannot use such a
// service (the endpoint's reply to a VIP it holds itself never leaves it):
// see docs/packet-flow.md. Others (LocalNode, Bypass) are refused.
type ForwardMethod = ipvs.ForwardMethod

// TunnelType is a tunnel's encapsulation (Tunnel.Type): ipvs.IPIP (the
// zero value), ipvs.GUE or ipvs.GRE.
type TunnelType = ipvs.TunnelType

// TunnelFlags are a GUE or GRE tunnel's checksum options (Tunnel.Flags):
// ipvs.TunnelNoCsum (the zero value), ipvs.TunnelCsum or, for GUE only,
// ipvs.TunnelRemCsum.
type TunnelFlags = ipvs.TunnelFlags

// Tunnel is the tunnel of a service whose Forward is ipvs.Tunnel; the zero
// value is IP-in-IP. It is set on every destination of the service.
type Tunnel struct {
	// Type is the encapsulation: IPIP (the endpoint needs an ipip device,
	// e.g. tunl0, up), GUE (a fou port of type gue, and an ipip device) or
	// GRE (a gre device, e.g. gre0).
	Type TunnelType
	// Port is the UDP port GUE packets are sent to (1-65535): required
	// with GUE, refused with the others.
	Port int
	// Flags are GUE's and GRE's checksum options (none for IPIP): none,
	// TunnelCsum or, for GUE, TunnelRemCsum.
	Flags TunnelFlags
}

// forwardWords are the State's files' words for the methods
// (docs/state-format.md; the decoder also reads keepalived's NAT, DR and
// TUN, and gives these).
var forwardWords = []struct {
	m    ForwardMethod
	name string
}{
	{ipvs.Masq, "masquerade"},
	{ipvs.DirectRoute, "direct-route"},
	{ipvs.Tunnel, "tunnel"},
}

// forwardName is m as the State's files write it; a method they have no
// word for as its String (which the decoder refuses).
func forwardName(m ForwardMethod) string {
	for _, w := range forwardWords {
		if w.m == m {
			return w.name
		}
	}
	return m.String()
}

// forwardNamed is the method a decoded file's word names; "" is Masq.
func forwardNamed(name string) ForwardMethod {
	for _, w := range forwardWords {
		if name == w.name {
			return w.m
		}
	}
	return ipvs.Masq
}

// unNATed reports whether svc's replies come back through the node to be
// un-NATed (Masq), so that its traffic may be marked for masquerade.
func unNATed(svc *Service) bool { return svc.Forward == ipvs.Masq }

// destForward sets d's forwarding method and tunnel to svc's.
func destForward(d *ipvs.Destination, svc *Service) {
	d.Forward = svc.Forward
	if svc.Forward == ipvs.Tunnel {
		d.TunnelType = svc.Tunnel.Type
		d.TunnelPort = uint16(svc.Tunnel.Port)
		d.TunnelFlags = svc.Tunnel.Flags
	}
}
