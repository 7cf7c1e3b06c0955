package proxier

import (
	"bytes"
	"encoding/json"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier/internal/statefile"
)

// The State's text form (docs/state-format.md) lives in package
// proxier/internal/statefile, which knows the form and not the engine; this
// file is its public face, and the one conversion between a State and the
// form's values.

// DecodeState reads a State from its text form: JSON if the first byte that
// is not white space is '{', YAML otherwise. It returns a *ValidationError
// listing every problem of form it finds, and does not validate the values
// (see State.Validate and DecodeValidState). An empty document is an
// error, not an empty State (a State with no services is written {}), so
// that a file truncated to nothing does not remove every service.
func DecodeState(data []byte) (*State, error) {
	return stateOf(statefile.Decode(data))
}

// DecodeValidState reads a State as DecodeState does and validates it
// against c, as State.Validate does (a nil c is the zero Config), in one
// pass: a *ValidationError lists the problems of form and those of value
// together, each with its line (see DecodeStateWith). An invalid c is
// returned as Config.Validate reports it.
func DecodeValidState(data []byte, c *Config) (*State, error) {
	return DecodeStateWith(data, &DecodeOptions{Validate: true, Config: c})
}

// EncodeStateYAML writes s in its YAML text form, indented by two spaces;
// DecodeState reads it back as s. Zero values are left out; services are
// sorted by ID, an endpoint's ports by name.
func EncodeStateYAML(s *State) ([]byte, error) {
	t := s.text()
	return statefile.EncodeYAML(&t)
}

// MarshalJSON writes s in its JSON text form, so that encoding/json
// writes a State, or a value that holds one, in the designed form.
func (s State) MarshalJSON() ([]byte, error) {
	return json.Marshal(s.text())
}

// UnmarshalJSON reads s from its JSON text form as DecodeState does, so
// that encoding/json reads a State, or a value that holds one, in the
// designed form. Errors are *ValidationError, with paths and lines
// counted from the start of the State's own value; null leaves s as it is.
func (s *State) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	return s.set(stateOf(statefile.DecodeJSON(data)))
}

// MarshalYAML gives go.yaml.in/yaml/v3 the YAML text form of s, so that
// it writes a State, or a value that holds one, in the designed form.
func (s State) MarshalYAML() (any, error) {
	return s.text(), nil
}

// UnmarshalYAML reads s from its YAML text form as DecodeState does, so
// that go.yaml.in/yaml/v3 reads a State, or a value that holds one, in the
// designed form. Errors are *ValidationError, with the document's lines;
// null leaves s as it is.
func (s *State) UnmarshalYAML(value *yaml.Node) error {
	if value.Kind == yaml.ScalarNode && value.ShortTag() == "!!null" {
		return nil
	}
	return s.set(stateOf(statefile.DecodeYAMLNode(value)))
}

func (s *State) set(decoded *State, err error) error {
	if err != nil {
		return err
	}
	*s = *decoded
	return nil
}

// stateOf is the State the decoder read, or its problems as a
// *ValidationError.
func stateOf(t *statefile.State, problems []statefile.Problem) (*State, error) {
	if len(problems) > 0 {
		return nil, &ValidationError{Problems: problemsOf(problems)}
	}
	return stateFrom(t), nil
}

func problemsOf(problems []statefile.Problem) []Problem {
	out := make([]Problem, len(problems))
	for i, p := range problems {
		out[i] = Problem(p)
	}
	return out
}

// stateFrom is the State of what the decoder read.
func stateFrom(t *statefile.State) *State {
	s := &State{}
	if t.Node != nil {
		s.Node = Node{Addresses: t.Node.Addresses, NodePortCIDRs: t.Node.NodePortCIDRs}
	}
	if len(t.Services) > 0 {
		s.Services = make(map[string]Service, len(t.Services))
		for id, svc := range t.Services {
			s.Services[id] = serviceOf(&svc)
		}
	}
	return s
}

// serviceOf is a decoded service, whose words the decoder has checked and
// put in their canonical case.
func serviceOf(t *statefile.Service) Service {
	s := Service{
		ClusterIPs:               t.ClusterIPs,
		IPFamilies:               t.IPFamilies,
		ExternalIPs:              t.ExternalIPs,
		LoadBalancerIPs:          t.LoadBalancerIPs,
		LoadBalancerSourceRanges: t.LoadBalancerSourceRanges,
		Scheduler:                t.Scheduler,
		HealthCheckNodePort:      t.HealthCheckNodePort,
		OnePacket:                t.OnePacket,
		FirewallMark:             t.FirewallMark,
		Forward:                  forwardNamed(t.Forward),
	}
	if t.Tunnel != nil {
		s.Tunnel = tunnelOf(t.Tunnel)
	}
	for _, p := range t.Ports {
		s.Ports = append(s.Ports, Port{Name: p.Name, Protocol: protocolNamed(p.Protocol), Port: p.Port, TargetPort: p.TargetPort, NodePort: p.NodePort})
	}
	if a := t.SessionAffinity; a != nil {
		s.SessionAffinity = &SessionAffinity{Timeout: time.Duration(a.Timeout), IPv4PrefixLen: a.IPv4PrefixLen, IPv6PrefixLen: a.IPv6PrefixLen}
	}
	if t.ExternalTrafficPolicy == "Local" {
		s.ExternalTrafficPolicy = Local
	}
	if t.InternalTrafficPolicy == "Local" {
		s.InternalTrafficPolicy = Local
	}
	sched := t.Scheduler
	if sched == "" {
		sched = "rr"
	}
	// The decoder took only names ParseSchedFlags takes for sched.
	s.SchedulerFlags, _ = ipvs.ParseSchedFlags(sched, t.SchedulerFlags...)
	for i := range t.Endpoints {
		s.Endpoints = append(s.Endpoints, endpointOf(&t.Endpoints[i]))
	}
	return s
}

// text is s in the text form's values; zero values are left out.
func (s *State) text() statefile.State {
	var out statefile.State
	if len(s.Node.Addresses) > 0 || len(s.Node.NodePortCIDRs) > 0 {
		out.Node = &statefile.Node{Addresses: s.Node.Addresses, NodePortCIDRs: s.Node.NodePortCIDRs}
	}
	if len(s.Services) > 0 {
		out.Services = make(map[string]statefile.Service, len(s.Services))
		for id, svc := range s.Services {
			out.Services[id] = svc.text()
		}
	}
	return out
}

func (s *Service) text() statefile.Service {
	out := statefile.Service{
		ClusterIPs:               s.ClusterIPs,
		IPFamilies:               s.IPFamilies,
		ExternalIPs:              s.ExternalIPs,
		LoadBalancerIPs:          s.LoadBalancerIPs,
		LoadBalancerSourceRanges: s.LoadBalancerSourceRanges,
		Scheduler:                s.Scheduler,
		HealthCheckNodePort:      s.HealthCheckNodePort,
		OnePacket:                s.OnePacket,
		FirewallMark:             s.FirewallMark,
		Tunnel:                   tunnelText(s.Tunnel),
	}
	if s.Forward != ipvs.Masq {
		out.Forward = forwardName(s.Forward)
	}
	for _, p := range s.Ports {
		out.Ports = append(out.Ports, statefile.Port{Name: p.Name, Protocol: protocolName(p.Protocol), Port: p.Port, TargetPort: p.TargetPort, NodePort: p.NodePort})
	}
	if a := s.SessionAffinity; a != nil {
		out.SessionAffinity = &statefile.Affinity{Timeout: statefile.Duration(a.Timeout), IPv4PrefixLen: a.IPv4PrefixLen, IPv6PrefixLen: a.IPv6PrefixLen}
	}
	if s.ExternalTrafficPolicy != Cluster {
		out.ExternalTrafficPolicy = s.ExternalTrafficPolicy.String()
	}
	if s.InternalTrafficPolicy != Cluster {
		out.InternalTrafficPolicy = s.InternalTrafficPolicy.String()
	}
	sched := s.Scheduler
	if sched == "" {
		sched = "rr"
	}
	out.SchedulerFlags = s.SchedulerFlags.Names(sched)
	for i := range s.Endpoints {
		// TestFormatCoversEveryField fails for a field added to Endpoint
		// until the text form has it too.
		out.Endpoints = append(out.Endpoints, s.Endpoints[i].text())
	}
	return out
}
