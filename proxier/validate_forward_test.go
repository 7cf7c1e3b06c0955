package proxier

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/ipvskit/ipvskit/ipvs"
)

// drService is a valid direct-routing service with two ports, one named
// in an endpoint's ports.
func drService() Service {
	return Service{
		ExternalIPs: []netip.Addr{a("198.18.102.80")},
		Ports:       []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: 80}, {Name: "dns", Protocol: UDP, Port: 53}},
		Forward:     ipvs.DirectRoute,
		Endpoints:   []Endpoint{{Addr: a("198.18.1.80"), Ready: true, Ports: map[string]int{"dns": 53}}},
	}
}

// Every method's valid forms pass; each invalid one is one problem naming
// its field and value, with the reason.
func TestValidateForward(t *testing.T) {
	base := `services["lb"]`
	for _, c := range []struct {
		name string
		edit func(*Service)
		want []Problem
	}{
		{"direct-route", func(*Service) {}, nil},
		{"masquerade with port mapping and a node port", func(s *Service) {
			s.Forward, s.Ports[0].TargetPort, s.Ports[0].NodePort = ipvs.Masq, 8080, 30080
		}, nil},
		{"ipip", func(s *Service) { s.Forward = ipvs.Tunnel }, nil},
		{"gue with remcsum", func(s *Service) {
			s.Forward, s.Tunnel = ipvs.Tunnel, Tunnel{Type: ipvs.GUE, Port: 6080, Flags: ipvs.TunnelRemCsum}
		}, nil},
		{"gre with csum", func(s *Service) { s.Forward, s.Tunnel = ipvs.Tunnel, Tunnel{Type: ipvs.GRE, Flags: ipvs.TunnelCsum} }, nil},
		{"local node", func(s *Service) { s.Forward = ipvs.LocalNode }, []Problem{
			{base + ".forward", "local", "is not masquerade, direct-route or tunnel", 0}}},
		{"a tunnel without forward tunnel", func(s *Service) { s.Tunnel.Type = ipvs.GRE }, []Problem{
			{base + ".tunnel", "{Type:gre Port:0 Flags:nocsum}", "is set with forward direct-route: a tunnel is only for forward tunnel", 0}}},
		{"gue without a port", func(s *Service) { s.Forward, s.Tunnel.Type = ipvs.Tunnel, ipvs.GUE }, []Problem{
			{base + ".tunnel.port", "0", "out of range 1-65535 (a gue tunnel needs the UDP port its packets are sent to)", 0}}},
		{"gue port too high", func(s *Service) { s.Forward, s.Tunnel = ipvs.Tunnel, Tunnel{Type: ipvs.GUE, Port: 65536} }, []Problem{
			{base + ".tunnel.port", "65536", "out of range 1-65535 (a gue tunnel needs the UDP port its packets are sent to)", 0}}},
		{"ipip with a port and a checksum", func(s *Service) { s.Forward, s.Tunnel = ipvs.Tunnel, Tunnel{Port: 6080, Flags: ipvs.TunnelCsum} }, []Problem{
			{base + ".tunnel.port", "6080", "is set for a tunnel of type ipip: only gue has a port", 0},
			{base + ".tunnel.checksum", "csum", "is set for an ipip tunnel, which has no checksum options", 0}}},
		{"gre with remcsum", func(s *Service) { s.Forward, s.Tunnel = ipvs.Tunnel, Tunnel{Type: ipvs.GRE, Flags: ipvs.TunnelRemCsum} }, []Problem{
			{base + ".tunnel.checksum", "remcsum", "is a gue option (a gre tunnel takes none or csum)", 0}}},
		{"both checksums", func(s *Service) {
			s.Forward, s.Tunnel = ipvs.Tunnel, Tunnel{Type: ipvs.GUE, Port: 1, Flags: ipvs.TunnelCsum | ipvs.TunnelRemCsum}
		}, []Problem{{base + ".tunnel.checksum", "csum,remcsum", "is not none, csum or remcsum", 0}}},
		{"an unknown tunnel", func(s *Service) { s.Forward, s.Tunnel.Type = ipvs.Tunnel, 7 }, []Problem{
			{base + ".tunnel.type", "tunnel(7)", "is not ipip, gue or gre", 0}}},
		{"port mapping", func(s *Service) { s.Ports[0].TargetPort = 8080 }, []Problem{
			{base + ".ports[0].targetPort", "8080", "differs from port 80: with forward direct-route the packet reaches the endpoint still addressed to the VIP's port, so no port can be mapped", 0}}},
		{"an endpoint's port", func(s *Service) { s.Forward, s.Endpoints[0].Ports["dns"] = ipvs.Tunnel, 5353 }, []Problem{
			{base + ".endpoints[0].ports[\"dns\"]", "5353", "differs from port 53: with forward tunnel the packet reaches the endpoint still addressed to the VIP's port, so no port can be mapped", 0}}},
		{"a node port", func(s *Service) { s.Ports[1].NodePort = 30053 }, []Problem{
			{base + ".ports[1].nodePort", "30053", "is set with forward direct-route: a node port maps the node's address and port to the endpoints', and the packet would reach them still addressed to the node's", 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			svc := drService()
			c.edit(&svc)
			s := State{Services: map[string]Service{"lb": svc}, Node: Node{Addresses: []netip.Addr{a("198.18.0.10")}}}
			err := s.Validate(&Config{})
			var got []Problem
			var ve *ValidationError
			if errors.As(err, &ve) {
				got = ve.Problems
			} else if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("problems\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}
