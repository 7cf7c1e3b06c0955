package proxier

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"testing"
)

// TestValidateInHalves checks that a State large enough to be validated in
// two halves at once gets exactly the verdict of a serial run: nil when
// valid, and, when a problem or a clash between the halves is possible, the
// serial run's every problem in its order.
func TestValidateInHalves(t *testing.T) {
	const n = halvesMin + 100
	ids := make([]string, 0, n)
	for i := range n {
		ids = append(ids, fmt.Sprintf("svc-%d", i))
	}
	slices.Sort(ids)
	first, last := ids[0], ids[n-1] // one in each half
	nodeAddr := netip.MustParseAddr("198.20.0.1")
	edit := func(s *State, id string, f func(*Service)) {
		svc := s.Services[id]
		svc.Ports = slices.Clone(svc.Ports)
		f(&svc)
		s.Services[id] = svc
	}
	for _, tc := range []struct {
		name    string
		change  func(s *State)
		inHalf  bool // settled by the halves alone
		invalid bool
	}{
		{name: "valid", change: func(*State) {}, inHalf: true},
		{name: "node ports apart", inHalf: true, change: func(s *State) {
			edit(s, first, func(svc *Service) { svc.Ports[0].NodePort = 30001 })
			edit(s, last, func(svc *Service) { svc.Ports[0].NodePort = 30002 })
		}},
		{name: "a problem in one half", invalid: true, change: func(s *State) {
			edit(s, last, func(svc *Service) { svc.Ports[0].Port = 70000 })
		}},
		{name: "a problem in each half", invalid: true, change: func(s *State) {
			edit(s, first, func(svc *Service) { svc.Ports[0].Port = 0 })
			edit(s, last, func(svc *Service) { svc.Ports[0].TargetPort = -1 })
		}},
		{name: "the same frontend in both halves", invalid: true, change: func(s *State) {
			c := s.Services[first].ClusterIPs
			edit(s, last, func(svc *Service) { svc.ClusterIPs = c })
		}},
		{name: "the same node port in both halves", invalid: true, change: func(s *State) {
			edit(s, first, func(svc *Service) { svc.Ports[0].NodePort = 30001 })
			edit(s, last, func(svc *Service) { svc.Ports[0].NodePort = 30001 })
		}},
		{name: "an external IP on a node address at a node port of the other half", invalid: true, change: func(s *State) {
			s.Node.Addresses = []netip.Addr{nodeAddr}
			edit(s, first, func(svc *Service) { svc.Ports[0].NodePort = 80 })
			edit(s, last, func(svc *Service) { svc.ExternalIPs = []netip.Addr{nodeAddr} })
		}},
		{name: "marks apart", inHalf: true, change: func(s *State) {
			edit(s, first, func(svc *Service) { svc.FirewallMark, svc.Ports[0].TargetPort = 1, 0 })
			edit(s, last, func(svc *Service) { svc.FirewallMark, svc.Ports[0].TargetPort = 2, 0 })
		}},
		{name: "the same firewall mark in both halves", invalid: true, change: func(s *State) {
			edit(s, first, func(svc *Service) { svc.FirewallMark, svc.Ports[0].TargetPort = 1, 0 })
			edit(s, last, func(svc *Service) { svc.FirewallMark, svc.Ports[0].TargetPort = 1, 0 })
		}},
		{name: "a firewall mark with the masquerade bit", invalid: true, change: func(s *State) {
			edit(s, last, func(svc *Service) { svc.FirewallMark, svc.Ports[0].TargetPort = 1<<14, 0 })
		}},
		{name: "an external IP on a node address, alone", change: func(s *State) {
			s.Node.Addresses = []netip.Addr{nodeAddr}
			edit(s, last, func(svc *Service) { svc.ExternalIPs = []netip.Addr{nodeAddr} })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := bigState(n)
			tc.change(s)
			c := &Config{}
			nodeAddrs := map[netip.Addr]bool{}
			for _, a := range s.Node.Addresses {
				nodeAddrs[a] = true
			}
			mm := c.options(IPv4).MasqueradeMark
			h := &validator{families: enabledFamilies(c), masqMark: mm}
			if got := h.servicesInHalves(s, ids, nodeAddrs); got != tc.inHalf {
				t.Fatalf("settled by the halves: %v, want %v", got, tc.inHalf)
			}
			if len(h.problems) != 0 {
				t.Fatalf("the halves left problems in v: %v", h.problems)
			}

			serial := &validator{families: enabledFamilies(c), masqMark: mm}
			serial.services(s, ids, nodeAddrs)
			err := s.Validate(c)
			if want := serial.err(); !reflect.DeepEqual(err, want) {
				t.Fatalf("Validate: %v\nserial: %v", err, want)
			}
			if (err != nil) != tc.invalid {
				t.Fatalf("Validate: %v, want invalid %v", err, tc.invalid)
			}
		})
	}
}
