package lbd

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"

	"github.com/ipvskit/ipvskit/proxier"
)

// ProxierConfig is the Proxier's configuration for c: its instance, and
// the families of its virtual servers' addresses.
func (c *Config) ProxierConfig() *proxier.Config {
	pc := &proxier.Config{Instance: c.Instance, SyncDaemons: c.SyncDaemons}
	for _, name := range c.names() {
		f := proxier.IPv4
		if c.VirtualServers[name].Address.Is6() {
			f = proxier.IPv6
		}
		if !slices.Contains(pc.Families, f) {
			pc.Families = append(pc.Families, f)
		}
	}
	return pc
}

// names are the virtual servers' names in order.
func (c *Config) names() []string {
	names := make([]string, 0, len(c.VirtualServers))
	for n := range c.VirtualServers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Health says whether a virtual server's real server is up. A real server
// whose check is none is always up; one not yet checked is up too
// (keepalived without alpha), so a start or reload takes no server out
// before its checks say so.
type Health func(vs string, rs *RealServer) bool

// Service is the Proxier's Service for the virtual server name as health
// says its real servers are: those up at their weight; those down
// removed, or quiesced (weight 0) with InhibitOnFailure; and the sorry
// server, if any, when none is up. sorry says whether it is in use.
func (c *Config) Service(name string, health Health) (svc *proxier.Service, sorry bool) {
	vs := c.VirtualServers[name]
	svc = vs.frame()
	up := 0
	for _, rs := range vs.RealServers {
		switch {
		case health == nil || health(name, rs):
			up++
			svc.Endpoints = append(svc.Endpoints, vs.endpoint(rs, false))
		case rs.InhibitOnFailure:
			svc.Endpoints = append(svc.Endpoints, vs.endpoint(rs, true))
		}
	}
	if up == 0 && vs.Sorry != nil {
		svc.Endpoints = append(svc.Endpoints, vs.endpoint(vs.Sorry, false))
		sorry = true
	}
	return svc, sorry
}

// State is the Proxier's State for c as health says.
func (c *Config) State(health Health) *proxier.State {
	s := &proxier.State{Services: make(map[string]proxier.Service, len(c.VirtualServers))}
	for name := range c.VirtualServers {
		svc, _ := c.Service(name, health)
		s.Services[name] = *svc
	}
	return s
}

// frame is the virtual server's Service without endpoints.
func (vs *VirtualServer) frame() *proxier.Service {
	svc := &proxier.Service{
		ClusterIPs:   []netip.Addr{vs.Address},
		FirewallMark: vs.FirewallMark,
		Scheduler:    vs.Scheduler,
		Forward:      vs.Forward,
		Tunnel:       vs.Tunnel,
		OnePacket:    vs.OnePacket,
	}
	if vs.Persistence != nil {
		a := *vs.Persistence
		svc.SessionAffinity = &a
	}
	for _, p := range vs.Ports {
		pt := proxier.Port{Protocol: vs.Protocol, Port: p}
		if len(vs.Ports) > 1 {
			pt.Name = portName(p)
		}
		svc.Ports = append(svc.Ports, pt)
	}
	return svc
}

func portName(p int) string { return fmt.Sprintf("port-%d", p) }

// endpoint is rs as an Endpoint of vs, quiesced if it is failed and
// inhibited, or its weight is 0.
func (vs *VirtualServer) endpoint(rs *RealServer, failed bool) proxier.Endpoint {
	e := proxier.Endpoint{
		Addr:           rs.Address,
		Ready:          true,
		UpperThreshold: rs.UpperThreshold,
		LowerThreshold: rs.LowerThreshold,
	}
	switch {
	case failed || rs.Weight == 0:
		e.Quiesced = true
	case rs.Weight != 1:
		e.Weight = rs.Weight
	}
	if rs.Port != 0 && (len(vs.Ports) != 1 || rs.Port != vs.Ports[0]) {
		e.Ports = map[string]int{}
		for _, pt := range vs.frame().Ports {
			e.Ports[pt.Name] = rs.Port
		}
	}
	return e
}
