package proxier

import (
	"fmt"
	"maps"
	"slices"

	"github.com/ipvskit/ipvskit/ipvs"
)

// forward checks svc's forwarding method and tunnel (at base), and what
// the method rules out: a port mapping, a node port (see ForwardMethod).
func (v *validator) forward(base string, svc *Service) {
	m := svc.Forward
	switch m {
	case ipvs.Masq, ipvs.DirectRoute:
		if svc.Tunnel != (Tunnel{}) {
			v.add(base+".tunnel", fmt.Sprintf("%+v", svc.Tunnel), "is set with forward %s: a tunnel is only for forward tunnel", forwardName(m))
		}
	case ipvs.Tunnel:
		v.tunnel(base+".tunnel", svc.Tunnel)
	default:
		v.add(base+".forward", forwardName(m), "is not masquerade, direct-route or tunnel")
		return
	}
	if m == ipvs.Masq {
		return
	}
	// The packet reaches the endpoint still addressed to the VIP and its
	// port: the kernel rewrites neither (ip_vs_dr_xmit, ip_vs_tunnel_xmit).
	why := fmt.Sprintf("with forward %s the packet reaches the endpoint still addressed to the VIP's port, so no port can be mapped", forwardName(m))
	for i, pt := range svc.Ports {
		p := func() string { return fmt.Sprintf("%s.ports[%d]", base, i) }
		if pt.TargetPort != 0 && pt.TargetPort != pt.Port {
			v.add(p()+".targetPort", pt.TargetPort, "differs from port %d: %s", pt.Port, why)
		}
		if pt.NodePort != 0 {
			v.add(p()+".nodePort", pt.NodePort, "is set with forward %s: a node port maps the node's address and port to the endpoints', and the packet would reach them still addressed to the node's", forwardName(m))
		}
	}
	for i := range svc.Endpoints {
		e := &svc.Endpoints[i]
		if len(e.Ports) == 0 {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(e.Ports)) {
			j := slices.IndexFunc(svc.Ports, func(pt Port) bool { return pt.Name == name })
			if j < 0 || e.Ports[name] == svc.Ports[j].Port {
				continue // a name of no port is reported by endpoints
			}
			v.add(fmt.Sprintf("%s.endpoints[%d].ports[%q]", base, i, name), e.Ports[name],
				"differs from port %d: %s", svc.Ports[j].Port, why)
		}
	}
}

// tunnel checks the tunnel of a service whose Forward is Tunnel, as the
// kernel and ipvsadm take it: a GUE tunnel needs its port
// (ip_vs_add_dest refuses port 0), the others take none; checksum options
// are GUE's and GRE's (remote checksum offload GUE's alone), one at a time.
func (v *validator) tunnel(path string, t Tunnel) {
	switch t.Type {
	case ipvs.IPIP, ipvs.GRE:
		if t.Port != 0 {
			v.add(path+".port", t.Port, "is set for a tunnel of type %v: only gue has a port", t.Type)
		}
	case ipvs.GUE:
		if t.Port < 1 || t.Port > 65535 {
			v.add(path+".port", t.Port, "out of range 1-65535 (a gue tunnel needs the UDP port its packets are sent to)")
		}
	default:
		v.add(path+".type", t.Type, "is not ipip, gue or gre")
		return
	}
	switch f := t.Flags; {
	case f == ipvs.TunnelNoCsum:
	case f != ipvs.TunnelCsum && f != ipvs.TunnelRemCsum:
		v.add(path+".checksum", f, "is not none, csum or remcsum")
	case t.Type == ipvs.IPIP:
		v.add(path+".checksum", f, "is set for an ipip tunnel, which has no checksum options")
	case t.Type == ipvs.GRE && f == ipvs.TunnelRemCsum:
		v.add(path+".checksum", f, "is a gue option (a gre tunnel takes none or csum)")
	}
}
