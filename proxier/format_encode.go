package proxier

import (
	"net/netip"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The text form as Go values: encoding/json and the yaml package write
// these, with the form's names and words. Only the YAML of ports and
// endpoints has a method (each is one line), so writing them does not come
// back to State's methods.
type (
	stateText struct {
		Services map[string]serviceText `json:"services,omitempty" yaml:"services,omitempty"`
		Node     *nodeText              `json:"node,omitempty" yaml:"node,omitempty"`
	}
	nodeText struct {
		Addresses     []netip.Addr   `json:"addresses,omitempty" yaml:"addresses,omitempty,flow"`
		NodePortCIDRs []netip.Prefix `json:"nodePortCIDRs,omitempty" yaml:"nodePortCIDRs,omitempty,flow"`
	}
	serviceText struct {
		ClusterIPs               []netip.Addr   `json:"clusterIPs,omitempty" yaml:"clusterIPs,omitempty,flow"`
		IPFamilies               []Family       `json:"ipFamilies,omitempty" yaml:"ipFamilies,omitempty,flow"`
		Ports                    []portText     `json:"ports,omitempty" yaml:"ports,omitempty"`
		ExternalIPs              []netip.Addr   `json:"externalIPs,omitempty" yaml:"externalIPs,omitempty,flow"`
		LoadBalancerIPs          []netip.Addr   `json:"loadBalancerIPs,omitempty" yaml:"loadBalancerIPs,omitempty,flow"`
		LoadBalancerSourceRanges []netip.Prefix `json:"loadBalancerSourceRanges,omitempty" yaml:"loadBalancerSourceRanges,omitempty,flow"`
		SessionAffinity          *affinityText  `json:"sessionAffinity,omitempty" yaml:"sessionAffinity,omitempty,flow"`
		ExternalTrafficPolicy    string         `json:"externalTrafficPolicy,omitempty" yaml:"externalTrafficPolicy,omitempty"`
		InternalTrafficPolicy    string         `json:"internalTrafficPolicy,omitempty" yaml:"internalTrafficPolicy,omitempty"`
		Scheduler                string         `json:"scheduler,omitempty" yaml:"scheduler,omitempty"`
		SchedulerFlags           []string       `json:"schedulerFlags,omitempty" yaml:"schedulerFlags,omitempty,flow"`
		HealthCheckNodePort      int            `json:"healthCheckNodePort,omitempty" yaml:"healthCheckNodePort,omitempty"`
		Endpoints                []endpointText `json:"endpoints,omitempty" yaml:"endpoints,omitempty"`
	}
	portText struct {
		Name       string `json:"name,omitempty" yaml:"name,omitempty"`
		Protocol   string `json:"protocol" yaml:"protocol"`
		Port       int    `json:"port" yaml:"port"`
		TargetPort int    `json:"targetPort,omitempty" yaml:"targetPort,omitempty"`
		NodePort   int    `json:"nodePort,omitempty" yaml:"nodePort,omitempty"`
	}
	endpointText struct {
		Addr        netip.Addr     `json:"addr" yaml:"addr"`
		Ports       map[string]int `json:"ports,omitempty" yaml:"ports,omitempty"`
		Ready       bool           `json:"ready,omitempty" yaml:"ready,omitempty"`
		Serving     bool           `json:"serving,omitempty" yaml:"serving,omitempty"`
		Terminating bool           `json:"terminating,omitempty" yaml:"terminating,omitempty"`
		Local       bool           `json:"local,omitempty" yaml:"local,omitempty"`
	}
	affinityText struct {
		Timeout string `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	}
)

// MarshalYAML writes a port on one line, {name: http, protocol: TCP, ...}.
func (p portText) MarshalYAML() (any, error) {
	type plain portText
	return flowNode(plain(p))
}

// MarshalYAML writes an endpoint on one line, {addr: 198.18.1.1, ...}.
func (e endpointText) MarshalYAML() (any, error) {
	type plain endpointText
	return flowNode(plain(e))
}

func flowNode(v any) (*yaml.Node, error) {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return nil, err
	}
	n.Style = yaml.FlowStyle
	return &n, nil
}

// text is s in the text form's values; zero values are left out.
func (s *State) text() stateText {
	var out stateText
	if len(s.Node.Addresses) > 0 || len(s.Node.NodePortCIDRs) > 0 {
		out.Node = &nodeText{Addresses: s.Node.Addresses, NodePortCIDRs: s.Node.NodePortCIDRs}
	}
	if len(s.Services) > 0 {
		out.Services = make(map[string]serviceText, len(s.Services))
		for id, svc := range s.Services {
			out.Services[id] = svc.text()
		}
	}
	return out
}

func (s *Service) text() serviceText {
	out := serviceText{
		ClusterIPs:               s.ClusterIPs,
		IPFamilies:               s.IPFamilies,
		ExternalIPs:              s.ExternalIPs,
		LoadBalancerIPs:          s.LoadBalancerIPs,
		LoadBalancerSourceRanges: s.LoadBalancerSourceRanges,
		Scheduler:                s.Scheduler,
		HealthCheckNodePort:      s.HealthCheckNodePort,
	}
	for _, p := range s.Ports {
		out.Ports = append(out.Ports, portText{Name: p.Name, Protocol: string(p.Protocol), Port: p.Port, TargetPort: p.TargetPort, NodePort: p.NodePort})
	}
	if a := s.SessionAffinity; a != nil {
		out.SessionAffinity = &affinityText{}
		if a.Timeout != 0 {
			out.SessionAffinity.Timeout = durationText(a.Timeout)
		}
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
	for _, e := range s.Endpoints {
		// A conversion: a field added to Endpoint stops it compiling
		// until endpointText has it too.
		out.Endpoints = append(out.Endpoints, endpointText(e))
	}
	return out
}

// durationText is Go's form of t without its zero minutes and seconds:
// "10m" for 10m0s, "3h" for 3h0m0s, "1h30m" for 1h30m0s.
func durationText(t time.Duration) string {
	s := t.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
