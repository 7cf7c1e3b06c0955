package proxier

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// problemStrings is err's problems as Problem.String forms, or fails t if err
// is not a *ValidationError.
func problemStrings(t *testing.T, err error) []string {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want a *ValidationError, got %v", err)
	}
	var out []string
	for _, p := range ve.Problems {
		out = append(out, p.String())
	}
	return out
}

// Weights and thresholds in their ranges pass; each bad one is refused
// with its field and value.
func TestValidateWeightsAndThresholds(t *testing.T) {
	ep := `services["web"].endpoints[0].`
	for _, c := range []struct {
		e    Endpoint
		want []string // nil: valid
	}{
		{Endpoint{Weight: 1}, nil},
		{Endpoint{Weight: MaxWeight, UpperThreshold: MaxThreshold, LowerThreshold: MaxThreshold}, nil},
		{Endpoint{Quiesced: true, UpperThreshold: 10}, nil},
		{Endpoint{UpperThreshold: 10}, nil},
		{Endpoint{UpperThreshold: 10, LowerThreshold: 10}, nil},
		{Endpoint{Weight: -1}, []string{ep + "weight: -1 out of range 0-65535 (0 means 1; Quiesced, or weight: 0 in a file, gives weight 0)"}},
		{Endpoint{Weight: 65536}, []string{ep + "weight: 65536 out of range 0-65535 (0 means 1; Quiesced, or weight: 0 in a file, gives weight 0)"}},
		{Endpoint{Weight: 2, Quiesced: true}, []string{ep + "weight: 2 is set on a quiesced endpoint, whose weight is 0"}},
		{Endpoint{UpperThreshold: -1, LowerThreshold: 1 << 31}, []string{
			ep + "upperThreshold: -1 out of range 0-2147483647 (0 means none)",
			ep + "lowerThreshold: 2147483648 out of range 0-2147483647 (0 means none)",
		}},
		{Endpoint{UpperThreshold: -1, LowerThreshold: 5}, []string{ep + "upperThreshold: -1 out of range 0-2147483647 (0 means none)"}},
		{Endpoint{LowerThreshold: 5}, []string{ep + "lowerThreshold: 5 is set without an upperThreshold (the kernel refuses a lower threshold above the upper one)"}},
		{Endpoint{UpperThreshold: 10, LowerThreshold: 11}, []string{ep + "lowerThreshold: 11 is above the upperThreshold, 10 (the kernel refuses it)"}},
	} {
		t.Run(fmt.Sprintf("%+v", c.e), func(t *testing.T) {
			c.e.Addr, c.e.Ready = a("198.18.1.1"), true
			s := oneService()
			svc := s.Services["web"]
			svc.Endpoints = []Endpoint{c.e}
			s.Services["web"] = svc
			err := s.Validate(&Config{})
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if got := problemStrings(t, err); !slices.Equal(got, c.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			// Update validates the same way.
			r := newRig(t, nil)
			r.sync(t, oneService())
			if _, err := r.p.Update(t.Context(), map[string]*Service{"web": &svc}); !slices.Equal(problemStrings(t, err), c.want) {
				t.Errorf("Update: %v", err)
			}
		})
	}
}

// Two endpoints that would be one destination (the same address, and the
// same endpoint port for a port of the service) are refused, naming both;
// the same address at other ports is two destinations.
func TestValidateDuplicateEndpoints(t *testing.T) {
	two := []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: 8080}, {Name: "metrics", Protocol: TCP, Port: 9100}}
	for _, c := range []struct {
		name  string
		ports []Port
		eps   []Endpoint
		want  []string
	}{
		{"same address", nil, []Endpoint{{Addr: a("198.18.1.1"), Ready: true}, {Addr: a("198.18.1.2")}, {Addr: a("198.18.1.1"), Weight: 2}},
			[]string{`services["web"].endpoints[2]: 198.18.1.1:8080 is also endpoints[0] for port "http": two endpoints would be one destination`}},
		{"the same port by name and by target port", nil,
			[]Endpoint{{Addr: a("198.18.1.1")}, {Addr: a("198.18.1.1"), Ports: map[string]int{"http": 8080}}},
			[]string{`services["web"].endpoints[1]: 198.18.1.1:8080 is also endpoints[0] for port "http": two endpoints would be one destination`}},
		{"other ports", nil,
			[]Endpoint{{Addr: a("198.18.1.1")}, {Addr: a("198.18.1.1"), Ports: map[string]int{"http": 9090}}, {Addr: a("2001:db8:1::1")}},
			nil},
		{"one port of two the same", two,
			[]Endpoint{{Addr: a("198.18.1.1")}, {Addr: a("198.18.1.1"), Ports: map[string]int{"http": 9090}}},
			[]string{`services["web"].endpoints[1]: 198.18.1.1:9100 is also endpoints[0] for port "metrics": two endpoints would be one destination`}},
		{"three copies, each reported once", two,
			[]Endpoint{{Addr: a("198.18.1.1")}, {Addr: a("198.18.1.1")}, {Addr: a("198.18.1.1")}},
			[]string{
				`services["web"].endpoints[1]: 198.18.1.1:8080 is also endpoints[0] for port "http": two endpoints would be one destination`,
				`services["web"].endpoints[2]: 198.18.1.1:8080 is also endpoints[0] for port "http": two endpoints would be one destination`,
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, many := range []bool{false, true} { // compared in turn, and sorted
				s := oneService()
				svc := s.Services["web"]
				if c.ports != nil {
					svc.Ports = c.ports
				}
				svc.Endpoints = slices.Clone(c.eps)
				if many {
					for i := range 20 {
						svc.Endpoints = append(svc.Endpoints, Endpoint{Addr: netip.AddrFrom4([4]byte{198, 18, 9, byte(i)})})
					}
				}
				s.Services["web"] = svc
				err := s.Validate(&Config{Families: []Family{IPv4, IPv6}})
				if c.want == nil {
					if err != nil {
						t.Fatal(err)
					}
					continue
				}
				if got := problemStrings(t, err); !slices.Equal(got, c.want) {
					t.Errorf("many %v: problems:\n%s\nwant:\n%s", many, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
				}
			}
		})
	}
}
