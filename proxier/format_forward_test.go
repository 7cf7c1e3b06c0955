package proxier

import (
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/ipvs"
)

// The forwarding method and tunnel in the text form: every word the form
// writes and keepalived's, in any case; a tunnel without a type is ipip;
// each reads back as written by EncodeStateYAML, which writes the form's
// words and leaves out masquerade and a zero tunnel.
func TestFormatForward(t *testing.T) {
	for _, c := range []struct {
		in      string // the service's forward and tunnel, as YAML flow entries
		forward ForwardMethod
		tunnel  Tunnel
		out     string // what the encoder writes of them ("" for nothing)
	}{
		{"", ipvs.Masq, Tunnel{}, ""},
		{"forward: masquerade", ipvs.Masq, Tunnel{}, ""},
		{"forward: NAT", ipvs.Masq, Tunnel{}, ""},
		{"forward: direct-route", ipvs.DirectRoute, Tunnel{}, "forward: direct-route\n"},
		{"forward: dr", ipvs.DirectRoute, Tunnel{}, "forward: direct-route\n"},
		{"forward: Direct-Route", ipvs.DirectRoute, Tunnel{}, "forward: direct-route\n"},
		{"forward: TUN", ipvs.Tunnel, Tunnel{}, "forward: tunnel\n"},
		{"forward: tunnel, tunnel: {}", ipvs.Tunnel, Tunnel{}, "forward: tunnel\n"},
		{"forward: tunnel, tunnel: {type: IPIP}", ipvs.Tunnel, Tunnel{}, "forward: tunnel\n"},
		{"forward: tunnel, tunnel: {type: gue, port: 6080, checksum: none}", ipvs.Tunnel, Tunnel{Type: ipvs.GUE, Port: 6080},
			"forward: tunnel\n    tunnel: {type: gue, port: 6080}\n"},
		{"forward: tunnel, tunnel: {type: GUE, port: 6080, checksum: RemCsum}", ipvs.Tunnel, Tunnel{Type: ipvs.GUE, Port: 6080, Flags: ipvs.TunnelRemCsum},
			"forward: tunnel\n    tunnel: {type: gue, port: 6080, checksum: remcsum}\n"},
		{"forward: tunnel, tunnel: {type: gre, checksum: csum}", ipvs.Tunnel, Tunnel{Type: ipvs.GRE, Flags: ipvs.TunnelCsum},
			"forward: tunnel\n    tunnel: {type: gre, checksum: csum}\n"},
	} {
		t.Run(c.in, func(t *testing.T) {
			doc := "services: {lb: {ports: [{port: 80}]" + strings.TrimSuffix(", "+c.in, ", ") + "}}\n"
			s, err := DecodeState([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			svc := s.Services["lb"]
			if svc.Forward != c.forward || svc.Tunnel != c.tunnel {
				t.Errorf("%q read as %v %+v, want %v %+v", doc, svc.Forward, svc.Tunnel, c.forward, c.tunnel)
			}
			text, err := EncodeStateYAML(s)
			if err != nil {
				t.Fatal(err)
			}
			want := "services:\n  lb:\n    ports:\n      - {protocol: TCP, port: 80}\n    " + c.out
			if c.out == "" {
				want = strings.TrimSuffix(want, "    ")
			}
			if string(text) != want {
				t.Errorf("written as\n%s\nwant\n%s", text, want)
			}
			back, err := DecodeState(text)
			if err != nil || !serviceEqual(ptr(back.Services["lb"]), &svc) {
				t.Errorf("read back as %+v, %v", back, err)
			}
		})
	}
}

// Words the form does not have are refused with their line, each one.
func TestFormatForwardProblems(t *testing.T) {
	doc := "services:\n" +
		"  lb:\n" +
		"    ports: [{port: 80}]\n" +
		"    forward: local\n" +
		"    tunnel: {type: vxlan, port: gue, checksum: both, ttl: 3}\n"
	_, err := DecodeState([]byte(doc))
	var got []string
	if ve, ok := err.(*ValidationError); ok {
		for _, p := range ve.Problems {
			got = append(got, p.String())
		}
	}
	want := []string{
		`services["lb"].forward: "local" is not masquerade, direct-route or tunnel (or keepalived's NAT, DR, TUN) (line 4)`,
		`services["lb"].tunnel.ttl: is not a field of a tunnel (its fields are type, port, checksum) (line 5)`,
		`services["lb"].tunnel.type: "vxlan" is not ipip, gue or gre (line 5)`,
		`services["lb"].tunnel.port: "gue" is a string, want a number (line 5)`,
		`services["lb"].tunnel.checksum: "both" is not none, csum or remcsum (line 5)`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
