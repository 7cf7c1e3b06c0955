package conformance

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// The fallback difference (docs/kube-proxy-differences.md, "External
// traffic policy Local without a local endpoint" and "Internal traffic
// policy Local without a local endpoint"): kube-proxy's IPVS mode gives a
// virtual server whose policy is Local the cluster endpoints when the node
// has no local one (syncEndpoint, kubernetes#97081); for the cluster IP
// (internal policy) only when the port is also reachable from outside (a
// node port, an external or load-balancer IP). ipvskit gives such a
// virtual server no destinations, as Kubernetes' API promises and
// kube-proxy's iptables and nftables modes do.

// fallback says which frontends of a corpus case fall back on kube-proxy's
// node: external (node ports, external and load-balancer IPs) for the
// external policy Local, internal (cluster IPs) for the internal one.
type fallback struct{ internal, external bool }

// fallbackCases are the corpus's cases whose Services have a Local policy
// and no local endpoint, by name. Only their frontends of the kinds given
// may differ, and only by exactly the fallback (see fallbackRemoved and
// fallbackOutcome).
var fallbackCases = map[string]fallback{
	"nodeport-etp-local-without-local-endpoint":               {external: true},
	"nodeport-itp-local-without-local-endpoint":               {internal: true},
	"nodeport-itp-local-etp-local-without-local-endpoint":     {internal: true, external: true},
	"loadbalancer-etp-local-without-local-endpoint":           {external: true},
	"loadbalancer-itp-local-without-local-endpoint":           {internal: true},
	"loadbalancer-itp-local-etp-local-without-local-endpoint": {internal: true, external: true},
	"external-ips-itp-local-without-local-endpoint":           {internal: true},
}

// fellBack is one frontend of a fallback case: its address (invalid for a
// node port, which is served on every node address) and port, and the
// cluster endpoints kube-proxy gives it.
type fellBack struct {
	addr     netip.Addr
	port     uint16
	real     []string // "addr:port" as ipvsadm -Sn prints them, sorted
	backends string   // the backends' names, as outcome prints them ("b1,b2")
}

// matches says whether dst (an IPVS virtual server's or a probe's
// address and port) is f.
func (f fellBack) matches(dst netip.AddrPort) bool {
	return dst.Port() == f.port && (!f.addr.IsValid() || dst.Addr() == f.addr)
}

// fallbackFrontends lists the frontends of the given cases (those of
// fallbackCases among them) that fall back on kube-proxy's node.
func fallbackFrontends(cases []tcase) []fellBack {
	var out []fellBack
	for _, c := range cases {
		fb, ok := fallbackCases[c.name]
		if !ok {
			continue
		}
		for _, s := range c.steps(allocOf(c.name)) {
			for _, svc := range s.services {
				out = append(out, fellBackOf(svc, s.slices, fb)...)
			}
		}
	}
	return out
}

// fellBackOf is svc's frontends of the kinds fb names, each with the
// cluster endpoints of its family and port among sl.
func fellBackOf(svc *v1.Service, sl []*discovery.EndpointSlice, fb fallback) []fellBack {
	var out []fellBack
	for _, p := range svc.Spec.Ports {
		add := func(addr netip.Addr, port int32, v6 bool) {
			real, names := clusterEndpoints(svc.Name, sl, p.Name, v6)
			out = append(out, fellBack{addr: addr, port: uint16(port), real: real, backends: names})
		}
		var vips []string
		if fb.internal {
			vips = append(vips, svc.Spec.ClusterIPs...)
		}
		if fb.external {
			vips = append(vips, svc.Spec.ExternalIPs...)
			for _, in := range svc.Status.LoadBalancer.Ingress {
				vips = append(vips, in.IP)
			}
			if p.NodePort != 0 {
				for _, f := range svc.Spec.IPFamilies {
					add(netip.Addr{}, p.NodePort, f == v1.IPv6Protocol)
				}
			}
		}
		for _, v := range vips {
			a := netip.MustParseAddr(v)
			add(a, p.Port, a.Is6())
		}
	}
	return out
}

// clusterEndpoints is the ready endpoints of service svc's slices (of sl) of one
// family that list the port named port: as ipvsadm prints real servers,
// sorted, and as outcome names the backends that answer.
func clusterEndpoints(svc string, sl []*discovery.EndpointSlice, port string, v6 bool) (real []string, names string) {
	var bs []string
	for _, s := range sl {
		if s.Labels[discovery.LabelServiceName] != svc || (s.AddressType == discovery.AddressTypeIPv6) != v6 {
			continue
		}
		for _, sp := range s.Ports {
			if sp.Name == nil || *sp.Name != port {
				continue
			}
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && !*e.Conditions.Ready {
					continue
				}
				a := netip.MustParseAddr(e.Addresses[0])
				real = append(real, netip.AddrPortFrom(a, uint16(*sp.Port)).String())
				bs = append(bs, backendName(a))
			}
		}
	}
	slices.Sort(real)
	slices.Sort(bs)
	return real, strings.Join(slices.Compact(bs), ",")
}

// backendName is the name of the rig's backend with address a (see
// topology).
func backendName(a netip.Addr) string {
	for b := 1; b <= backends; b++ {
		if backendAddr(b, a.Is6()) == a.String() {
			return fmt.Sprintf("b%d", b)
		}
	}
	return a.String()
}

// fallbackRemoved splits ipvs diff lines (diff(kube-proxy's, ipvskit's))
// into those the fallback explains and the rest. A line is explained only
// if it is kube-proxy's ("- "), a destination of a virtual server that is
// one of fb, masqueraded at weight 1, and on that virtual server
// kube-proxy's node (kp: its ipvsadm -Sn lines) has exactly the frontend's
// cluster endpoints and ipvskit's node (ik) has no destination at all.
func fallbackRemoved(d, kp, ik []string, fb []fellBack) (bad, ok []string) {
	for _, l := range d {
		if fallbackLine(l, kp, ik, fb) {
			ok = append(ok, l)
		} else {
			bad = append(bad, l)
		}
	}
	return bad, ok
}

func fallbackLine(l string, kp, ik []string, fb []fellBack) bool {
	k, w, rest, isDest := destKey(strings.TrimPrefix(l, "- "))
	if !strings.HasPrefix(l, "- ") || !isDest || w != 1 || rest != "-m" {
		return false
	}
	f := strings.Fields(k) // -t VS -r RS
	dst, err := netip.ParseAddrPort(f[1])
	if err != nil {
		return false
	}
	vs := f[0] + " " + f[1]
	i := slices.IndexFunc(fb, func(x fellBack) bool { return x.matches(dst) })
	return i >= 0 && slices.Equal(realServers(kp, vs), fb[i].real) && len(realServers(ik, vs)) == 0
}

// realServers is the real servers of virtual server vs ("-t VIP:port")
// among ipvsadm -Sn lines, sorted.
func realServers(ipvs []string, vs string) []string {
	var out []string
	for k := range destinations(ipvs) {
		if rs, ok := strings.CutPrefix(k, vs+" -r "); ok {
			out = append(out, rs)
		}
	}
	slices.Sort(out)
	return out
}

// fallbackOutcome says whether a probe's outcomes on kube-proxy's node (kp)
// and ipvskit's (ik) differ by exactly the fallback: the probe is of a
// frontend of fb, kube-proxy's frontend was answered by exactly its
// cluster endpoints, and ipvskit's refused the client.
func fallbackOutcome(p probe, kp, ik string, fb []fellBack) bool {
	i := slices.IndexFunc(fb, func(x fellBack) bool { return x.matches(p.dst) })
	return i >= 0 && strings.HasPrefix(kp, fb[i].backends+" answered") && ik == "failed: refused"
}
