package statefile

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/ipvs"
)

// The fields of each object of the text form, in the order they are
// decoded and encoded (a service's scheduler before its flags, which are
// named for it).
var (
	stateFields    = []string{"services", "node"}
	nodeFields     = []string{"addresses", "nodePortCIDRs"}
	serviceFields  = []string{"clusterIPs", "ipFamilies", "ports", "firewallMark", "externalIPs", "loadBalancerIPs", "loadBalancerSourceRanges", "sessionAffinity", "externalTrafficPolicy", "internalTrafficPolicy", "scheduler", "schedulerFlags", "onePacket", "healthCheckNodePort", "forward", "tunnel", "endpoints"}
	portFields     = []string{"name", "protocol", "port", "targetPort", "nodePort"}
	endpointFields = []string{"addr", "ports", "ready", "serving", "terminating", "local", "weight", "upperThreshold", "lowerThreshold"}
	affinityFields = []string{"timeout", "ipv4PrefixLen", "ipv6PrefixLen"}
	tunnelFields   = []string{"type", "port", "checksum"}
)

// decodeTree builds a State from the tree of its text form, or returns
// every problem found.
func decodeTree(root *textValue) (*State, []Problem) {
	d := &stateDecoder{}
	s := d.state("", root)
	if len(d.problems) > 0 {
		return nil, d.problems
	}
	return s, nil
}

// stateDecoder walks the tree, collecting problems; each method returns
// what it could read (the zero value where it could not).
type stateDecoder struct {
	problems []Problem
	// lines, if not nil, records the line of every path visited (Lines).
	lines map[string]int
}

// at records that the value at path is at line.
func (d *stateDecoder) at(path string, line int) {
	if d.lines != nil && line > 0 {
		d.lines[path] = line
	}
}

func (d *stateDecoder) add(path string, line int, value, format string, args ...any) {
	d.problems = append(d.problems, Problem{Path: path, Value: value, Msg: fmt.Sprintf(format, args...), Line: line})
}

// wrong reports v, at path, as not of the kind wanted.
func (d *stateDecoder) wrong(path string, v *textValue, want string) {
	if v.kind == textOther {
		d.add(path, v.line, "", "is a YAML value tagged %s, want %s", v.text, want)
		return
	}
	d.add(path, v.line, v.shown(), "is %v, want %s", v.kind, want)
}

// fields checks that v is an object of the named fields, each given once,
// and returns them by name; a null field is left out, as if absent.
func (d *stateDecoder) fields(path string, v *textValue, what string, names []string) map[string]*textValue {
	if v.kind != textObject {
		if path == "" {
			path = "document"
		}
		d.wrong(path, v, "an object ("+what+")")
		return nil
	}
	out := make(map[string]*textValue, len(v.keys))
	seen := make(map[string]int, len(v.keys))
	for i, k := range v.keys {
		p := path + "." + k.name
		if path == "" {
			p = k.name
		}
		d.at(p, k.line)
		switch first, dup := seen[k.name]; {
		case dup:
			d.add(p, k.line, "", "is given twice (first at line %d)", first)
			continue
		case !slices.Contains(names, k.name):
			d.add(p, k.line, "", "is not a field of %s (%s)", what, fieldHint(k.name, names))
			continue
		}
		seen[k.name] = k.line
		if v.items[i].kind != textNull {
			out[k.name] = v.items[i]
		}
	}
	return out
}

// fieldHint names the field an unknown name was likely meant to be (the
// same but for case: "ClusterIPs", Go's name, is clusterIPs), or lists them
// all.
func fieldHint(name string, names []string) string {
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return "did you mean " + n + "?"
		}
	}
	return "its fields are " + strings.Join(names, ", ")
}

// entries checks that v is an object keyed by IDs, each given once, and
// calls each for every entry in order; path(key) is the entry's path.
func (d *stateDecoder) entries(path string, v *textValue, what string, each func(key, path string, v *textValue)) {
	if v.kind != textObject {
		d.wrong(path, v, "an object of "+what)
		return
	}
	seen := make(map[string]int, len(v.keys))
	for i, k := range v.keys {
		p := fmt.Sprintf("%s[%q]", path, k.name)
		if first, dup := seen[k.name]; dup {
			d.add(p, k.line, "", "is given twice (first at line %d)", first)
			continue
		}
		seen[k.name] = k.line
		d.at(p, k.line)
		each(k.name, p, v.items[i])
	}
}

// list checks that v is a list and calls each for every item.
func (d *stateDecoder) list(path string, v *textValue, what string, each func(i int, path string, v *textValue)) {
	if v.kind != textList {
		d.wrong(path, v, "a list of "+what)
		return
	}
	for i, item := range v.items {
		p := fmt.Sprintf("%s[%d]", path, i)
		d.at(p, item.line)
		each(i, p, item)
	}
}

// state decodes the State at base: "" for a document that is one, or
// where it is in a larger one ("state", "lb.state"), which its paths
// start with.
func (d *stateDecoder) state(base string, v *textValue) *State {
	s := &State{}
	f := d.fields(base, v, "a State", stateFields)
	if sv := f["services"]; sv != nil {
		d.entries(join(base, "services"), sv, "services by ID", func(id, path string, v *textValue) {
			svc, ok := d.service(path, v)
			if !ok {
				return
			}
			if s.Services == nil {
				s.Services = map[string]Service{}
			}
			s.Services[id] = svc
		})
	}
	if nv := f["node"]; nv != nil {
		node := join(base, "node")
		nf := d.fields(node, nv, "node", nodeFields)
		s.Node = &Node{
			Addresses:     d.addrs(node+".addresses", nf["addresses"]),
			NodePortCIDRs: d.prefixes(node+".nodePortCIDRs", nf["nodePortCIDRs"]),
		}
	}
	return s
}

// join is the path of field name under base ("" for the document).
func join(base, name string) string {
	if base == "" {
		return name
	}
	return base + "." + name
}

func (d *stateDecoder) service(path string, v *textValue) (Service, bool) {
	var s Service
	if v.kind != textObject {
		d.wrong(path, v, "an object (a service)")
		return s, false
	}
	f := d.fields(path, v, "a service", serviceFields)
	s.ClusterIPs = d.addrs(path+".clusterIPs", f["clusterIPs"])
	s.IPFamilies = d.families(path+".ipFamilies", f["ipFamilies"])
	if pv := f["ports"]; pv != nil {
		d.list(path+".ports", pv, "ports", func(_ int, path string, v *textValue) {
			s.Ports = append(s.Ports, d.port(path, v))
		})
	}
	s.FirewallMark = d.mark(path+".firewallMark", f["firewallMark"])
	s.ExternalIPs = d.addrs(path+".externalIPs", f["externalIPs"])
	s.LoadBalancerIPs = d.addrs(path+".loadBalancerIPs", f["loadBalancerIPs"])
	s.LoadBalancerSourceRanges = d.prefixes(path+".loadBalancerSourceRanges", f["loadBalancerSourceRanges"])
	if av := f["sessionAffinity"]; av != nil {
		af := d.fields(path+".sessionAffinity", av, "session affinity", affinityFields)
		s.SessionAffinity = &Affinity{
			Timeout:       d.duration(path+".sessionAffinity.timeout", af["timeout"]),
			IPv4PrefixLen: d.integer(path+".sessionAffinity.ipv4PrefixLen", af["ipv4PrefixLen"]),
			IPv6PrefixLen: d.integer(path+".sessionAffinity.ipv6PrefixLen", af["ipv6PrefixLen"]),
		}
	}
	s.ExternalTrafficPolicy = d.trafficPolicy(path+".externalTrafficPolicy", f["externalTrafficPolicy"])
	s.InternalTrafficPolicy = d.trafficPolicy(path+".internalTrafficPolicy", f["internalTrafficPolicy"])
	s.Scheduler = d.str(path+".scheduler", f["scheduler"])
	s.SchedulerFlags = d.schedFlags(path+".schedulerFlags", f["schedulerFlags"], s.Scheduler)
	s.OnePacket = d.boolean(path+".onePacket", f["onePacket"])
	s.HealthCheckNodePort = d.integer(path+".healthCheckNodePort", f["healthCheckNodePort"])
	s.Forward = d.forward(path+".forward", f["forward"])
	if tv := f["tunnel"]; tv != nil {
		s.Tunnel = d.tunnel(path+".tunnel", tv)
	}
	if ev := f["endpoints"]; ev != nil {
		d.list(path+".endpoints", ev, "endpoints", func(_ int, path string, v *textValue) {
			s.Endpoints = append(s.Endpoints, d.endpoint(path, v))
		})
	}
	return s, true
}

func (d *stateDecoder) port(path string, v *textValue) Port {
	f := d.fields(path, v, "a port", portFields)
	return Port{
		Name:       d.str(path+".name", f["name"]),
		Protocol:   d.protocol(path+".protocol", f["protocol"]),
		Port:       d.integer(path+".port", f["port"]),
		TargetPort: d.integer(path+".targetPort", f["targetPort"]),
		NodePort:   d.integer(path+".nodePort", f["nodePort"]),
	}
}

func (d *stateDecoder) endpoint(path string, v *textValue) Endpoint {
	f := d.fields(path, v, "an endpoint", endpointFields)
	e := Endpoint{
		Addr:        d.addr(path+".addr", f["addr"]),
		Ready:       d.boolean(path+".ready", f["ready"]),
		Serving:     d.boolean(path+".serving", f["serving"]),
		Terminating: d.boolean(path+".terminating", f["terminating"]),
		Local:       d.boolean(path+".local", f["local"]),
		// Their ranges are the values' (validation), not the form's.
		UpperThreshold: d.integer(path+".upperThreshold", f["upperThreshold"]),
		LowerThreshold: d.integer(path+".lowerThreshold", f["lowerThreshold"]),
	}
	if wv := f["weight"]; wv != nil {
		w := d.integer(path+".weight", wv)
		e.Weight = &w
	}
	if f["addr"] == nil && v.kind == textObject {
		d.add(path+".addr", v.line, "", "is missing (an endpoint needs an address)")
	}
	if pv := f["ports"]; pv != nil {
		d.entries(path+".ports", pv, "port numbers by port name", func(name, path string, v *textValue) {
			if e.Ports == nil {
				e.Ports = map[string]int{}
			}
			e.Ports[name] = d.integer(path, v)
		})
	}
	return e
}

// The leaves: each takes nil (absent or null) as the zero value.

func (d *stateDecoder) str(path string, v *textValue) string {
	if v == nil {
		return ""
	}
	if v.kind != textString {
		d.wrong(path, v, "a string")
		return ""
	}
	return v.text
}

func (d *stateDecoder) boolean(path string, v *textValue) bool {
	if v == nil {
		return false
	}
	if v.kind != textBool {
		d.wrong(path, v, "true or false")
		return false
	}
	return v.text == "true"
}

func (d *stateDecoder) integer(path string, v *textValue) int {
	if v == nil {
		return 0
	}
	if v.kind != textNumber {
		d.wrong(path, v, "a number")
		return 0
	}
	n, err := strconv.Atoi(v.text)
	switch {
	case errors.Is(err, strconv.ErrRange):
		d.add(path, v.line, v.text, "is out of range")
	case err != nil: // 1.5, 1e3, YAML's .inf
		d.add(path, v.line, v.text, "is not a whole number")
	}
	return n
}

// mark is a firewall mark: a number of 32 bits.
func (d *stateDecoder) mark(path string, v *textValue) uint32 {
	n := d.integer(path, v)
	if n < 0 || n > math.MaxUint32 {
		d.add(path, v.line, v.text, "is out of range 0-%d", uint32(math.MaxUint32))
		return 0
	}
	return uint32(n)
}

func (d *stateDecoder) addr(path string, v *textValue) netip.Addr {
	s := d.str(path, v)
	if v == nil || v.kind != textString {
		return netip.Addr{}
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		d.add(path, v.line, v.shown(), "is not an IP address")
	}
	return a
}

func (d *stateDecoder) addrs(path string, v *textValue) []netip.Addr {
	var out []netip.Addr
	if v != nil {
		d.list(path, v, "addresses", func(_ int, path string, v *textValue) {
			out = append(out, d.addr(path, v))
		})
	}
	return out
}

func (d *stateDecoder) prefixes(path string, v *textValue) []netip.Prefix {
	var out []netip.Prefix
	if v != nil {
		d.list(path, v, "prefixes", func(_ int, path string, v *textValue) {
			s := d.str(path, v)
			if v.kind != textString {
				out = append(out, netip.Prefix{})
				return
			}
			p, err := netip.ParsePrefix(s)
			if err != nil {
				d.add(path, v.line, v.shown(), "is not a prefix (address/bits)")
			}
			out = append(out, p)
		})
	}
	return out
}

// protocol reads TCP, UDP or SCTP in any case, and gives it upper case;
// absent means TCP.
func (d *stateDecoder) protocol(path string, v *textValue) string {
	if v == nil {
		return "TCP"
	}
	s := d.str(path, v)
	switch p := strings.ToUpper(s); p {
	case "TCP", "UDP", "SCTP":
		return p
	}
	if v.kind == textString {
		d.add(path, v.line, v.shown(), "is not TCP, UDP or SCTP")
	}
	return s
}

// trafficPolicy reads Cluster or Local in any case, and gives it in that
// case; absent is "", which means Cluster.
func (d *stateDecoder) trafficPolicy(path string, v *textValue) string {
	s := d.str(path, v)
	switch {
	case v == nil || v.kind != textString:
		return ""
	case strings.EqualFold(s, "Cluster"):
		return "Cluster"
	case strings.EqualFold(s, "Local"):
		return "Local"
	}
	d.add(path, v.line, v.shown(), "is not Cluster or Local")
	return ""
}

// duration reads a Go duration ("10m", "3h", "600s") or a number of
// seconds.
func (d *stateDecoder) duration(path string, v *textValue) Duration {
	if v == nil {
		return 0
	}
	var text string
	switch v.kind {
	case textString:
		text = v.text
	case textNumber:
		text = v.text + "s"
	default:
		d.wrong(path, v, `a duration ("10m", "3h") or a number of seconds`)
		return 0
	}
	t, err := time.ParseDuration(text)
	if err != nil {
		d.add(path, v.line, v.shown(), `is not a duration ("10m", "3h") or a number of seconds`)
	}
	return Duration(t)
}

// families reads a list of family names as inet.ParseFamily does ("IPv4",
// "IPv6", in any case); a bad name is kept as 0, for the error's index.
func (d *stateDecoder) families(path string, v *textValue) []inet.Family {
	if v == nil {
		return nil
	}
	var out []inet.Family
	d.list(path, v, `families ("IPv4", "IPv6")`, func(_ int, path string, v *textValue) {
		name := d.str(path, v)
		if v.kind != textString {
			return
		}
		f, err := inet.ParseFamily(name)
		if err != nil {
			d.add(path, v.line, v.shown(), "is not IPv4 or IPv6")
		}
		out = append(out, f)
	})
	return out
}

// schedFlags reads a list of ipvsadm's flag names for the scheduler sched
// (none is rr), in any case, and gives them in lower case, as
// ipvs.ParseSchedFlags takes them.
func (d *stateDecoder) schedFlags(path string, v *textValue, sched string) []string {
	if sched == "" {
		sched = "rr"
	}
	var flags []string
	if v == nil {
		return nil
	}
	d.list(path, v, `flag names such as "sh-port"`, func(_ int, path string, v *textValue) {
		name := strings.ToLower(d.str(path, v))
		if v.kind != textString {
			return
		}
		if _, err := ipvs.ParseSchedFlags(sched, name); err == nil {
			flags = append(flags, name)
			return
		}
		for _, owner := range []string{"sh", "mh"} {
			if slices.Contains(ipvs.SchedFlagNames(owner), name) {
				d.add(path, v.line, v.shown(), "is a flag of the %s scheduler, not of %s", owner, sched)
				return
			}
		}
		d.add(path, v.line, v.shown(), "is not a flag of the %s scheduler (%s)", sched, strings.Join(ipvs.SchedFlagNames(sched), ", "))
	})
	return flags
}

// Fields returns the names of the fields of one object of the form, in the
// order the decoder reads them: object is "state", "node", "service",
// "port", "endpoint", "sessionAffinity" or "tunnel". Tests hold the form's names to
// proxier.State's fields with it.
func Fields(object string) []string {
	switch object {
	case "state":
		return slices.Clone(stateFields)
	case "node":
		return slices.Clone(nodeFields)
	case "service":
		return slices.Clone(serviceFields)
	case "port":
		return slices.Clone(portFields)
	case "endpoint":
		return slices.Clone(endpointFields)
	case "sessionAffinity":
		return slices.Clone(affinityFields)
	case "tunnel":
		return slices.Clone(tunnelFields)
	}
	return nil
}
