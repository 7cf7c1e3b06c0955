package cni

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/proxier"
)

// State is the proxier.State the stanza asks for: a service per entry of
// Services, by Name, with the VIP as its cluster IP, one port, and every
// backend ready. c must come from Parse.
func (c *NetConf) State() *proxier.State { return c.state() }

// ProxierConfig is the proxier.Config the stanza asks for: its back end,
// VIP mode and instance, and the families of its VIPs (IPv6 served only
// when a VIP is IPv6). c must come from Parse.
func (c *NetConf) ProxierConfig() *proxier.Config { return c.proxierConfig() }

func (c *NetConf) state() *proxier.State {
	st := &proxier.State{Services: make(map[string]proxier.Service, len(c.Services))}
	for i := range c.Services {
		s := &c.Services[i]
		proto, _ := s.protocol()
		svc := proxier.Service{
			Ports:     []proxier.Port{{Protocol: proto, Port: s.Port, TargetPort: s.TargetPort}},
			Scheduler: s.Scheduler,
		}
		if vip, err := netip.ParseAddr(s.VIP); err == nil {
			svc.ClusterIPs = []netip.Addr{vip}
		}
		for _, b := range s.Backends {
			if a, err := netip.ParseAddr(b); err == nil {
				svc.Endpoints = append(svc.Endpoints, proxier.Endpoint{Addr: a, Ready: true, Serving: true})
			}
		}
		st.Services[s.id()] = svc
	}
	return st
}

func (c *NetConf) proxierConfig() *proxier.Config {
	b, _ := c.backend()
	m, _ := c.vipMode()
	cfg := &proxier.Config{Instance: c.Instance, Backend: b, VIPMode: m, Families: []proxier.Family{proxier.IPv4}}
	for _, s := range c.Services {
		if a, err := netip.ParseAddr(s.VIP); err == nil && a.Is6() {
			cfg.Families = append(cfg.Families, proxier.IPv6)
			break
		}
	}
	return cfg
}

// id is the service's ID in the State.
func (s *ServiceConf) id() string {
	if s.Name != "" {
		return s.Name
	}
	p, _ := s.protocol()
	return fmt.Sprintf("%s/%s", netip.AddrPortFrom(parseOrZero(s.VIP), uint16(s.Port)), p)
}

func parseOrZero(s string) netip.Addr {
	a, _ := netip.ParseAddr(s)
	return a
}

func (s *ServiceConf) protocol() (proxier.Protocol, error) {
	if s.Protocol == "" {
		return proxier.TCP, nil
	}
	p, err := inet.ParseProtocol(s.Protocol)
	if err != nil || (p != proxier.TCP && p != proxier.UDP && p != proxier.SCTP) {
		return 0, errors.New("is not tcp, udp or sctp")
	}
	return p, nil
}

func (c *NetConf) backend() (proxier.Backend, error) {
	switch c.Backend {
	case "", "nftables":
		return proxier.NFTables, nil
	case "iptables":
		return proxier.IPTables, nil
	}
	return 0, errors.New("is not nftables or iptables")
}

func (c *NetConf) vipMode() (proxier.VIPMode, error) {
	switch c.VIPMode {
	case "", "addresses":
		return proxier.VIPAddresses, nil
	case "local-routes":
		return proxier.VIPLocalRoutes, nil
	}
	return 0, errors.New("is not addresses or local-routes")
}
