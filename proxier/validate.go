package proxier

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/internal/nsfd"
	"github.com/ipvskit/ipvskit/ipvs"
)

// ValidationError lists every problem found in a State or Config. Nothing is
// applied when validation fails.
type ValidationError struct {
	Problems []Problem
}

// Problem is one invalid value: where it is, what it is, and what is wrong.
type Problem struct {
	Path  string // e.g. services["web"].ports[1].nodePort
	Value string // the offending value, as text
	Msg   string // e.g. "out of range 0-65535"
	// Line is the line of the value in the file it was read from, from 1
	// (docs/state-format.md); 0 when not known: a State built in Go, or a
	// problem of syntax, whose Path is its line ("line 3").
	Line int
}

// String returns the problem as ValidationError lists it, with its line.
func (p Problem) String() string {
	s := p.Path + ": " + p.Msg
	if p.Value != "" {
		s = p.Path + ": " + p.Value + " " + p.Msg
	}
	if p.Line > 0 {
		s += " (line " + strconv.Itoa(p.Line) + ")"
	}
	return s
}

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	n := fmt.Sprintf("%d problems", len(e.Problems))
	if len(e.Problems) == 1 {
		n = "1 problem"
	}
	return fmt.Sprintf("proxier: invalid state (%s):\n  %s", n, strings.Join(lines, "\n  "))
}

type validator struct {
	problems []Problem
	families map[Family]bool
	// served, when changes are validated, holds the services that stay;
	// changing are the services being set or deleted.
	served   *served
	changing map[string]*Service
	// exclude are Config.ExcludeCIDRs, where no VIP may be.
	exclude []netip.Prefix
	// masqMark is the masquerade mark, which no firewall mark may have;
	// marks the firewall-mark keys seen, with their service's path.
	masqMark uint32
	marks    map[ipvs.ServiceKey]string
	// dests is duplicateEndpoints' scratch space.
	dests []destRef
}

// first returns the path of the first use of frontend or node port k (a
// node port if node): in local, the uses seen so far, or by a service that
// stays.
func (v *validator) first(local map[vipKey]claim, k vipKey, node bool) (string, bool) {
	if c, ok := local[k]; ok {
		return c.path(), true
	}
	if v.served != nil {
		return v.served.heldBy(k, node, v.changing)
	}
	return "", false
}

func (v *validator) add(path string, value any, format string, args ...any) {
	val := ""
	if value != nil {
		val = fmt.Sprint(value)
	}
	v.problems = append(v.problems, Problem{Path: path, Value: val, Msg: fmt.Sprintf(format, args...)})
}

// netns checks the namespace argument of Open and Preflight, named path:
// 0 (the caller's namespace) or an open network namespace descriptor.
func (v *validator) netns(path string, fd int) {
	if _, reason, ok := nsfd.Check(fd); !ok {
		v.add(path, fd, "%s", reason)
	} else if fd > 0 {
		if reason, ok := nsfd.IsNet(fd); !ok {
			v.add(path, fd, "%s", reason)
		}
	}
}

func (v *validator) err() error {
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
}

// Validate checks s against c (which must be valid) and returns a
// *ValidationError listing every problem, in a stable order.
func (s *State) Validate(c *Config) error {
	v := &validator{families: enabledFamilies(c), exclude: c.ExcludeCIDRs, masqMark: c.options(IPv4).MasqueradeMark}
	v.state(s)
	return v.err()
}

func (v *validator) prefix(path string, p netip.Prefix) {
	switch {
	case !p.IsValid():
		v.add(path, p, "is not a valid prefix")
	case p.Masked() != p:
		v.add(path, p, "has host bits set (want %v)", p.Masked())
	}
}

// vipKey identifies a frontend for duplicate detection.
type vipKey struct {
	addr  netip.Addr
	port  int
	proto Protocol
}

func (v *validator) state(s *State) {
	nodeAddrs := map[netip.Addr]bool{}
	for i, a := range s.Node.Addresses {
		p := fmt.Sprintf("node.addresses[%d]", i)
		if !a.IsValid() || a.IsUnspecified() || a.IsMulticast() {
			v.add(p, a, "is not a unicast address")
			continue
		}
		nodeAddrs[a.Unmap()] = true
	}
	for i, p := range s.Node.NodePortCIDRs {
		v.prefix(fmt.Sprintf("node.nodePortCIDRs[%d]", i), p)
	}

	ids := make([]string, 0, len(s.Services))
	for id := range s.Services {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) >= halvesMin && len(v.problems) == 0 && v.served == nil && v.servicesInHalves(s, ids, nodeAddrs) {
		return
	}
	v.services(s, ids, nodeAddrs)
}

// services checks the services ids of s, in that order.
func (v *validator) services(s *State, ids []string, nodeAddrs map[netip.Addr]bool) {
	vips := make(map[vipKey]claim, len(ids)) // frontend -> its first use
	nodePorts := map[vipKey]claim{}          // node port (addr unset) -> its first use
	for _, id := range ids {
		svc := s.Services[id]
		v.service(id, &svc, nodeAddrs, vips, nodePorts)
	}
}

// service checks the service id, svc. Paths are formatted only for a
// problem: a valid State of 50,000 services has none to format.
func (v *validator) service(id string, svc *Service, nodeAddrs map[netip.Addr]bool, vips, nodePorts map[vipKey]claim) {
	base := "services[" + strconv.Quote(id) + "]"
	if id == "" {
		v.add(base, nil, "the service ID is empty")
	}
	v.ipFamilies(base, svc.IPFamilies)
	// vip checks a VIP of the service, field[i], in its families too, and
	// refuses those of refused. An external or load-balancer IP may be a
	// node address (served by its virtual servers, never bound: see
	// Node.Addresses); a cluster IP may not.
	vip := func(field string, i int, a netip.Addr, refused map[netip.Addr]bool) bool {
		if v.vipUsable(a, refused) && (len(svc.IPFamilies) == 0 || slices.Contains(svc.IPFamilies, inet.FamilyOf(a))) {
			return true
		}
		path := fmt.Sprintf("%s.%s[%d]", base, field, i)
		if v.vip(path, a, refused) {
			f := inet.FamilyOf(a)
			v.add(path, a, "is %v, a family the service is not served in (ipFamilies %v)", f, svc.IPFamilies)
		}
		return false
	}
	seenFam := map[Family]bool{}
	for i, a := range svc.ClusterIPs {
		if !vip("clusterIPs", i, a, nodeAddrs) {
			continue
		}
		if f := inet.FamilyOf(a); seenFam[f] {
			v.add(fmt.Sprintf("%s.clusterIPs[%d]", base, i), a, "is a second %v cluster IP (at most one per family)", f)
		} else {
			seenFam[f] = true
		}
	}
	for i, a := range svc.ExternalIPs {
		vip("externalIPs", i, a, nil)
	}
	for i, a := range svc.LoadBalancerIPs {
		vip("loadBalancerIPs", i, a, nil)
	}
	for i, p := range svc.LoadBalancerSourceRanges {
		if !p.IsValid() || p.Masked() != p {
			v.prefix(fmt.Sprintf("%s.loadBalancerSourceRanges[%d]", base, i), p)
		}
	}
	if a := svc.SessionAffinity; a != nil {
		p := base + ".sessionAffinity.timeout"
		switch {
		case a.Timeout < 0 || a.Timeout > MaxAffinityTimeout:
			v.add(p, a.Timeout, "out of range 0-%v", MaxAffinityTimeout)
		case a.Timeout%time.Second != 0:
			v.add(p, a.Timeout, "is not a whole number of seconds")
		}
	}
	for _, tp := range []struct {
		name string
		p    TrafficPolicy
	}{{"externalTrafficPolicy", svc.ExternalTrafficPolicy}, {"internalTrafficPolicy", svc.InternalTrafficPolicy}} {
		if tp.p != Cluster && tp.p != Local {
			v.add(base+"."+tp.name, tp.p, "is not Cluster or Local")
		}
	}
	v.scheduler(base, svc.Scheduler, svc.SchedulerFlags)
	v.knobs(base, svc)
	v.fwmark(id, base, svc)
	switch hc := svc.HealthCheckNodePort; {
	case hc < 0 || hc > 65535:
		v.add(base+".healthCheckNodePort", hc, "out of range 0-65535")
	case hc != 0 && svc.ExternalTrafficPolicy != Local:
		v.add(base+".healthCheckNodePort", hc, "is set with the external traffic policy %v: a health check is only for Local", svc.ExternalTrafficPolicy)
	}
	v.ports(id, base, svc, nodeAddrs, vips, nodePorts)
	v.endpoints(base, svc)
	v.duplicateEndpoints(base, svc)
	v.forward(base, svc)
}

// ipFamilies checks a service's IPFamilies: each IPv4 or IPv6, enabled,
// listed once.
func (v *validator) ipFamilies(base string, fams []Family) {
	p := func(i int) string { return fmt.Sprintf("%s.ipFamilies[%d]", base, i) }
	for i, f := range fams {
		switch {
		case !f.IsValid():
			v.add(p(i), f, "is not IPv4 or IPv6")
		case !v.families[f]:
			v.add(p(i), f, "is a family the config does not enable")
		case slices.Contains(fams[:i], f):
			v.add(p(i), f, "is listed twice")
		}
	}
}

// vipUsable is vip without a problem to report: whether a is usable.
func (v *validator) vipUsable(a netip.Addr, nodeAddrs map[netip.Addr]bool) bool {
	return a.IsValid() && !a.Is4In6() && !a.IsUnspecified() && !a.IsMulticast() && !a.IsLoopback() &&
		!a.IsLinkLocalUnicast() && v.families[inet.FamilyOf(a)] && !nodeAddrs[a] && excludedIn(v.exclude, a) < 0
}

// vip checks one virtual IP and reports whether it is usable.
func (v *validator) vip(path string, a netip.Addr, nodeAddrs map[netip.Addr]bool) bool {
	switch {
	case !a.IsValid():
		v.add(path, a, "is not a valid address")
	case a.Is4In6():
		v.add(path, a, "is an IPv4-mapped IPv6 address (write it as IPv4)")
	case a.IsUnspecified() || a.IsMulticast() || a.IsLoopback() || a.IsLinkLocalUnicast():
		v.add(path, a, "is not a usable VIP (unspecified, multicast, loopback or link-local)")
	case !v.families[inet.FamilyOf(a)]:
		v.add(path, a, "is %v, which the config does not enable", inet.FamilyOf(a))
	case nodeAddrs[a]:
		v.add(path, a, "equals a node address (a cluster IP is bound on the VIP link and in the IPVSIPs set, whose filter rule refuses the node's other ports there)")
	case v.excludedVIP(path, a):
	default:
		return true
	}
	return false
}

// schedulers the kernel has (ip_vs_*.ko); twos came in Linux 6.2.
var schedulers = []string{"rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq", "fo", "ovf", "mh", "twos"}

func (v *validator) scheduler(base, name string, flags ipvs.SchedFlags) {
	if name != "" && !slices.Contains(schedulers, name) {
		v.add(base+".scheduler", quote(name), "is not an IPVS scheduler (%s)", strings.Join(schedulers, ", "))
		return // its flags cannot be judged
	}
	if flags == 0 {
		return
	}
	if name != "sh" && name != "mh" {
		v.add(base+".schedulerFlags", flags, "are only meaningful for the sh and mh schedulers, not %q", name)
	} else if flags&^(ipvs.SchedFlag1|ipvs.SchedFlag2|ipvs.SchedFlag3) != 0 {
		v.add(base+".schedulerFlags", flags, "has bits outside the scheduler flags")
	}
}

// ports checks the ports of the service id (at base), and that no
// frontend or node port of them is already used.
func (v *validator) ports(id, base string, svc *Service, nodeAddrs map[netip.Addr]bool, vips, nodePorts map[vipKey]claim) {
	if len(svc.Ports) == 0 {
		v.add(base+".ports", nil, "is empty (a service needs at least one port)")
	}
	for i, pt := range svc.Ports {
		p := func() string { return fmt.Sprintf("%s.ports[%d]", base, i) }
		v.port(p, svc, i)
		if pt.NodePort < 0 || pt.NodePort > 65535 {
			v.add(p()+".nodePort", pt.NodePort, "out of range 0-65535")
		} else if pt.NodePort != 0 {
			k := vipKey{port: pt.NodePort, proto: pt.Protocol}
			if first, dup := v.first(nodePorts, k, true); dup {
				v.add(p()+".nodePort", pt.NodePort, "is already used for %s by %s", protocolName(pt.Protocol), first)
			} else if first, dup := v.onNodeAddr(k, nodeAddrs, vips); dup {
				v.add(p()+".nodePort", pt.NodePort, "is also the port of %s on a node address (one virtual server for both)", first)
			} else {
				nodePorts[k] = claim{id: id, port: i, node: true}
			}
		}
		if pt.Port < 1 || pt.Port > 65535 {
			continue
		}
		for _, group := range [][]netip.Addr{svc.ClusterIPs, svc.ExternalIPs, svc.LoadBalancerIPs} {
			for _, a := range group {
				k := vipKey{addr: a, port: pt.Port, proto: pt.Protocol}
				first, dup := v.first(vips, k, false)
				msg := "is already served by %s"
				if !dup && nodeAddrs[a] {
					first, dup = v.first(nodePorts, vipKey{port: pt.Port, proto: pt.Protocol}, true)
					msg = "is on a node address at a port %s uses (one virtual server for both)"
				}
				if dup {
					v.add(p(), fmt.Sprintf("%s/%s", netip.AddrPortFrom(a, uint16(pt.Port)), protocolName(pt.Protocol)), msg, first)
				} else {
					vips[k] = claim{id: id, port: i}
				}
			}
		}
	}
	if hc := svc.HealthCheckNodePort; hc > 0 && hc <= 65535 {
		k := vipKey{port: hc, proto: TCP}
		if first, dup := v.first(nodePorts, k, true); dup {
			v.add(base+".healthCheckNodePort", hc, "is already used for TCP by %s", first)
		} else if first, dup := v.onNodeAddr(k, nodeAddrs, vips); dup {
			v.add(base+".healthCheckNodePort", hc, "is also the port of %s on a node address, which would take its traffic", first)
		} else {
			nodePorts[k] = claim{id: id, port: -1}
		}
	}
}

// onNodeAddr returns who serves an external or load-balancer IP that is a
// node address at the port of node port k (addr unset), on the lowest such
// address: there the two would be one virtual server. It allocates
// nothing: it runs for every node port.
func (v *validator) onNodeAddr(k vipKey, nodeAddrs map[netip.Addr]bool, vips map[vipKey]claim) (string, bool) {
	var at netip.Addr
	holder := ""
	for a := range nodeAddrs {
		if first, dup := v.first(vips, vipKey{addr: a, port: k.port, proto: k.proto}, false); dup && (!at.IsValid() || a.Less(at)) {
			at, holder = a, first
		}
	}
	return holder, at.IsValid()
}

// port checks port i of svc alone (at path p): its name, protocol and
// numbers but the node port.
func (v *validator) port(p func() string, svc *Service, i int) {
	pt := svc.Ports[i]
	for j := i - 1; j >= 0; j-- { // the last port before it of the same name
		if svc.Ports[j].Name == pt.Name {
			v.add(p()+".name", quote(pt.Name), "is also the name of ports[%d]", j)
			break
		}
	}
	if pt.Name == "" && len(svc.Ports) > 1 {
		v.add(p()+".name", `""`, "is empty in a service with several ports")
	} else if msg := badPortName(pt.Name); msg != "" {
		v.add(p()+".name", quote(pt.Name), "%s", msg)
	}
	switch pt.Protocol {
	case TCP, UDP, SCTP:
	default:
		v.add(p()+".protocol", pt.Protocol, "is not TCP, UDP or SCTP")
	}
	if pt.Port < 1 || pt.Port > 65535 {
		v.add(p()+".port", pt.Port, "out of range 1-65535")
	}
	if pt.TargetPort < 0 || pt.TargetPort > 65535 {
		v.add(p()+".targetPort", pt.TargetPort, "out of range 0-65535")
	}
}

func (v *validator) endpoints(base string, svc *Service) {
	// Paths are formatted only for a problem: a valid State of 10,000
	// services has 100,000 endpoints to check.
	path := func(i int) string { return fmt.Sprintf("%s.endpoints[%d]", base, i) }
	for i, ep := range svc.Endpoints {
		switch {
		case !ep.Addr.IsValid() || ep.Addr.IsUnspecified() || ep.Addr.IsMulticast():
			v.add(path(i)+".addr", ep.Addr, "is not a unicast address")
		case ep.Addr.Is4In6():
			v.add(path(i)+".addr", ep.Addr, "is an IPv4-mapped IPv6 address (write it as IPv4)")
		case !v.families[inet.FamilyOf(ep.Addr)]:
			v.add(path(i)+".addr", ep.Addr, "is %v, which the config does not enable", inet.FamilyOf(ep.Addr))
		}
		v.endpointKnobs(path, i, &svc.Endpoints[i])
		if len(ep.Ports) == 0 {
			continue
		}
		names := make([]string, 0, len(ep.Ports))
		for n := range ep.Ports {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			pp := func() string { return fmt.Sprintf("%s.ports[%q]", path(i), n) }
			if msg := badPortName(n); msg != "" {
				v.add(pp(), nil, "the name %s", msg)
			} else if !slices.ContainsFunc(svc.Ports, func(pt Port) bool { return pt.Name == n }) {
				v.add(pp(), nil, "names no port of the service")
			}
			if port := ep.Ports[n]; port < 1 || port > 65535 {
				v.add(pp(), port, "out of range 1-65535")
			}
		}
	}
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// badPortName says what is wrong with a port name, or "": empty (an
// unnamed port), or a DNS label as Kubernetes requires of an EndpointPort's
// name: at most 63 of a-z, 0-9 and '-', starting and ending with a letter
// or digit. A name is matched between service and endpoint ports, and
// printed in plans, errors and logs, so spaces, newlines, capitals and the
// like are refused rather than carried.
func badPortName(n string) string {
	if n == "" {
		return ""
	}
	if len(n) > 63 {
		return "is not a DNS label: longer than 63 characters"
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case c == '-' && i > 0 && i < len(n)-1:
		default:
			return "is not a DNS label: only a-z, 0-9 and '-' inside, a letter or digit at each end"
		}
	}
	return ""
}
