package statefile

import (
	"net/netip"
	"strings"
	"time"

	"github.com/ipvskit/ipvskit/inet"
	"go.yaml.in/yaml/v3"
)

// The text form as Go values: encoding/json and the yaml package write
// these, with the form's names and words, and the decoder fills them in
// (with each word in its canonical case). Only the YAML of ports and
// endpoints has a method (each is one line), so writing them does not come
// back to State's methods.
type (
	// State is a proxier.State.
	State struct {
		Services map[string]Service `json:"services,omitempty" yaml:"services,omitempty"`
		Node     *Node              `json:"node,omitempty" yaml:"node,omitempty"`
	}
	Node struct {
		Addresses     []netip.Addr   `json:"addresses,omitempty" yaml:"addresses,omitempty,flow"`
		NodePortCIDRs []netip.Prefix `json:"nodePortCIDRs,omitempty" yaml:"nodePortCIDRs,omitempty,flow"`
	}
	Service struct {
		ClusterIPs               []netip.Addr   `json:"clusterIPs,omitempty" yaml:"clusterIPs,omitempty,flow"`
		IPFamilies               []inet.Family  `json:"ipFamilies,omitempty" yaml:"ipFamilies,omitempty,flow"`
		Ports                    []Port         `json:"ports,omitempty" yaml:"ports,omitempty"`
		FirewallMark             uint32         `json:"firewallMark,omitempty" yaml:"firewallMark,omitempty"`
		ExternalIPs              []netip.Addr   `json:"externalIPs,omitempty" yaml:"externalIPs,omitempty,flow"`
		LoadBalancerIPs          []netip.Addr   `json:"loadBalancerIPs,omitempty" yaml:"loadBalancerIPs,omitempty,flow"`
		LoadBalancerSourceRanges []netip.Prefix `json:"loadBalancerSourceRanges,omitempty" yaml:"loadBalancerSourceRanges,omitempty,flow"`
		SessionAffinity          *Affinity      `json:"sessionAffinity,omitempty" yaml:"sessionAffinity,omitempty,flow"`
		ExternalTrafficPolicy    string         `json:"externalTrafficPolicy,omitempty" yaml:"externalTrafficPolicy,omitempty"`
		InternalTrafficPolicy    string         `json:"internalTrafficPolicy,omitempty" yaml:"internalTrafficPolicy,omitempty"`
		Scheduler                string         `json:"scheduler,omitempty" yaml:"scheduler,omitempty"`
		SchedulerFlags           []string       `json:"schedulerFlags,omitempty" yaml:"schedulerFlags,omitempty,flow"`
		OnePacket                bool           `json:"onePacket,omitempty" yaml:"onePacket,omitempty"`
		HealthCheckNodePort      int            `json:"healthCheckNodePort,omitempty" yaml:"healthCheckNodePort,omitempty"`
		Forward                  string         `json:"forward,omitempty" yaml:"forward,omitempty"`
		Tunnel                   *Tunnel        `json:"tunnel,omitempty" yaml:"tunnel,omitempty,flow"`
		Endpoints                []Endpoint     `json:"endpoints,omitempty" yaml:"endpoints,omitempty"`
	}
	Port struct {
		Name       string `json:"name,omitempty" yaml:"name,omitempty"`
		Protocol   string `json:"protocol" yaml:"protocol"`
		Port       int    `json:"port" yaml:"port"`
		TargetPort int    `json:"targetPort,omitempty" yaml:"targetPort,omitempty"`
		NodePort   int    `json:"nodePort,omitempty" yaml:"nodePort,omitempty"`
	}
	Endpoint struct {
		Addr        netip.Addr     `json:"addr" yaml:"addr"`
		Ports       map[string]int `json:"ports,omitempty" yaml:"ports,omitempty"`
		Ready       bool           `json:"ready,omitempty" yaml:"ready,omitempty"`
		Serving     bool           `json:"serving,omitempty" yaml:"serving,omitempty"`
		Terminating bool           `json:"terminating,omitempty" yaml:"terminating,omitempty"`
		Local       bool           `json:"local,omitempty" yaml:"local,omitempty"`
		// Weight is absent for the default, 1; 0 is a quiesced endpoint.
		Weight         *int `json:"weight,omitempty" yaml:"weight,omitempty"`
		UpperThreshold int  `json:"upperThreshold,omitempty" yaml:"upperThreshold,omitempty"`
		LowerThreshold int  `json:"lowerThreshold,omitempty" yaml:"lowerThreshold,omitempty"`
	}
	// Tunnel is a service's tunnel, with the words of ipvsadm's
	// --tun-type and its checksum options.
	Tunnel struct {
		Type     string `json:"type" yaml:"type"`
		Port     int    `json:"port,omitempty" yaml:"port,omitempty"`
		Checksum string `json:"checksum,omitempty" yaml:"checksum,omitempty"`
	}
	Affinity struct {
		Timeout       Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
		IPv4PrefixLen int      `json:"ipv4PrefixLen,omitempty" yaml:"ipv4PrefixLen,omitempty"`
		IPv6PrefixLen int      `json:"ipv6PrefixLen,omitempty" yaml:"ipv6PrefixLen,omitempty"`
	}
)

// MarshalYAML writes a port on one line, {name: http, protocol: TCP, ...}.
func (p Port) MarshalYAML() (any, error) {
	type plain Port
	return flowNode(plain(p))
}

// MarshalYAML writes an endpoint on one line, {addr: 198.18.1.1, ...}.
func (e Endpoint) MarshalYAML() (any, error) {
	type plain Endpoint
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

// Duration is a session affinity's timeout, written as Go's form of it
// without its zero minutes and seconds: "10m" for 10m0s, "3h" for 3h0m0s,
// "1h30m" for 1h30m0s.
type Duration time.Duration

// MarshalText writes d as "10m" or "1h30m".
func (d Duration) MarshalText() ([]byte, error) {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return []byte(s), nil
}
