package conformance

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// probe is one address and port a step's Services expose, tried from one
// client address.
type probe struct {
	name     string // case/service:port target, for messages
	network  string // tcp or udp
	src, dst netip.AddrPort
	sticky   bool // session affinity: which backend answers is the scheduler's choice
}

// probesOf lists, for every TCP and UDP port of every Service of the step,
// each cluster IP, external IP, load-balancer ingress IP (also those of
// ipMode Proxy, which must not be served) and node port; from the client's
// address of the family, and for a load balancer with source ranges also
// from an address outside them.
func probesOf(s step) []probe {
	var out []probe
	for _, svc := range s.services {
		if svc.Spec.Type == v1.ServiceTypeExternalName {
			continue
		}
		for _, p := range svc.Spec.Ports {
			network := strings.ToLower(string(p.Protocol))
			if network != "tcp" && network != "udp" {
				continue // SCTP: compared by kernel state only
			}
			add := func(kind string, addr string, port int32, alt bool) {
				a, err := netip.ParseAddr(addr)
				if err != nil || port == 0 {
					return
				}
				src := clientAddr
				if a.Is6() {
					src = clientAddr6
				}
				name := fmt.Sprintf("%s:%s %s %s", svc.Name, p.Name, kind, netip.AddrPortFrom(a, uint16(port)))
				pr := probe{name: name, network: network, src: netip.AddrPortFrom(netip.MustParseAddr(src), 0),
					dst: netip.AddrPortFrom(a, uint16(port)), sticky: svc.Spec.SessionAffinity == v1.ServiceAffinityClientIP}
				out = append(out, pr)
				if alt && a.Is4() {
					pr.name += " from " + clientAltAddr
					pr.src = netip.AddrPortFrom(netip.MustParseAddr(clientAltAddr), 0)
					out = append(out, pr)
				}
			}
			for _, ip := range svc.Spec.ClusterIPs {
				add("cluster", ip, p.Port, false)
			}
			for _, ip := range svc.Spec.ExternalIPs {
				add("external", ip, p.Port, false)
			}
			for _, in := range svc.Status.LoadBalancer.Ingress {
				add("lb", in.IP, p.Port, len(svc.Spec.LoadBalancerSourceRanges) > 0)
			}
			if p.NodePort != 0 {
				add("nodeport", nodeAddr, p.NodePort, false)
				if strings.Contains(svc.Name, "link-local-node-address") {
					add("nodeport", linkLocalNodeAddr, p.NodePort, false)
				}
				for _, f := range svc.Spec.IPFamilies {
					if f == v1.IPv6Protocol {
						add("nodeport", nodeAddr6, p.NodePort, false)
					}
				}
			}
		}
	}
	return out
}

// probeTimeout is how long a request waits for an answer or an error. An
// address nothing serves any more fails "unreachable" once the node's
// neighbour lookup gives up; on a loaded machine that took longer than 2 s
// and read as "timeout" on one node and not the other.
const probeTimeout = 4 * time.Second

// tries is how many requests a probe makes: more than the backends of any
// case, so that round robin shows every backend.
const tries = 5

// outcome runs the probe from the rig's client and describes what happened
// in words that do not depend on the node: which backends answered (or, for
// session affinity, how many), whether they saw the client's own address,
// and how requests failed.
func (r *rig) outcome(t *testing.T, p probe) string {
	var results []string
	r.client.Do(t, func() {
		for range tries {
			res := exchange(p.network, p.src, p.dst, probeTimeout)
			results = append(results, res)
			if !strings.HasPrefix(res, "b") {
				break // a failed request fails the same way again, slowly
			}
		}
	})
	var answered, failures []string
	source := map[string]bool{}
	for _, res := range results {
		f := strings.Fields(res)
		if len(f) != 2 || !strings.HasPrefix(f[0], "b") {
			failures = append(failures, res)
			continue
		}
		if !slices.Contains(answered, f[0]) {
			answered = append(answered, f[0])
		}
		if f[1] == p.src.Addr().String() {
			source["client's source kept"] = true
		} else {
			source["source rewritten"] = true
		}
	}
	slices.Sort(answered)
	var out []string
	switch {
	case len(answered) == 0:
	case p.sticky:
		out = append(out, fmt.Sprintf("%d backend(s) answered", len(answered)))
	default:
		out = append(out, strings.Join(answered, ",")+" answered")
	}
	for s := range source {
		out = append(out, s)
	}
	slices.Sort(out[min(1, len(out)):])
	if len(failures) > 0 {
		out = append(out, "failed: "+failures[0])
	}
	return strings.Join(out, "; ")
}
