package proxier

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Each bad input gives exactly these problems, as Problem.String writes
// them, in this order: paths as validation writes them, the value as
// written, and the line.
func TestDecodeStateProblems(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{{
		name: "bad address, JSON",
		in: `{"services": {"web": {"ports": [{"port": 80}], "endpoints": [
			{"addr": "198.18.1.1"}, {"addr": "198.18.1.2"},
			{"addr": "198.18.300.1"}]}}}`,
		want: []string{`services["web"].endpoints[2].addr: "198.18.300.1" is not an IP address (line 3)`},
	}, {
		name: "bad family",
		in:   "services:\n  web:\n    ipFamilies: [IPv6, IPv7, 4]\n",
		want: []string{`services["web"].ipFamilies[1]: "IPv7" is not IPv4 or IPv6 (line 3)`,
			`services["web"].ipFamilies[2]: 4 is a number, want a string (line 3)`},
	}, {
		name: "bad address, YAML",
		in:   "services:\n  web:\n    clusterIPs:\n      - 198.18.100.1\n      - 198.18.100.256\n",
		want: []string{`services["web"].clusterIPs[1]: "198.18.100.256" is not an IP address (line 5)`},
	}, {
		name: "every problem, not the first",
		in: `
services:
  web:
    ClusterIPs: [198.18.100.1]
    clusterIP: 198.18.100.1
    ports:
      - {name: http, protocol: HTTP, port: "80", nodePort: 30000.5}
      - {name: dns, protocol: udp, port: 99999999999999999999}
    externalTrafficPolicy: Remote
    sessionAffinity: {timeout: 10 minutes}
    loadBalancerSourceRanges: [198.18.20.0]
    scheduler: mh
    schedulerFlags: [mh-port, sh-port, flag-4]
    endpoints:
      - {addr: 198.18.1.1, ready: yes, ports: {http: eighty}}
      - {ready: true}
node:
  addresses: 198.18.0.10
  nodeports: []
`,
		want: []string{
			`services["web"].ClusterIPs: is not a field of a service (did you mean clusterIPs?) (line 4)`,
			`services["web"].clusterIP: is not a field of a service (its fields are clusterIPs, ipFamilies, ports, firewallMark, externalIPs, loadBalancerIPs, loadBalancerSourceRanges, sessionAffinity, externalTrafficPolicy, internalTrafficPolicy, scheduler, schedulerFlags, onePacket, healthCheckNodePort, forward, tunnel, endpoints) (line 5)`,
			`services["web"].ports[0].protocol: "HTTP" is not TCP, UDP or SCTP (line 7)`,
			`services["web"].ports[0].port: "80" is a string, want a number (line 7)`,
			`services["web"].ports[0].nodePort: 30000.5 is not a whole number (line 7)`,
			`services["web"].ports[1].port: 99999999999999999999 is out of range (line 8)`,
			`services["web"].loadBalancerSourceRanges[0]: "198.18.20.0" is not a prefix (address/bits) (line 11)`,
			`services["web"].sessionAffinity.timeout: "10 minutes" is not a duration ("10m", "3h") or a number of seconds (line 10)`,
			`services["web"].externalTrafficPolicy: "Remote" is not Cluster or Local (line 9)`,
			`services["web"].schedulerFlags[1]: "sh-port" is a flag of the sh scheduler, not of mh (line 13)`,
			`services["web"].schedulerFlags[2]: "flag-4" is not a flag of the mh scheduler (mh-fallback, mh-port, flag-1, flag-2, flag-3) (line 13)`,
			`services["web"].endpoints[0].ready: "yes" is a string, want true or false (line 15)`,
			`services["web"].endpoints[0].ports["http"]: "eighty" is a string, want a number (line 15)`,
			`services["web"].endpoints[1].addr: is missing (an endpoint needs an address) (line 16)`,
			`node.nodeports: is not a field of node (its fields are addresses, nodePortCIDRs) (line 19)`,
			`node.addresses: "198.18.0.10" is a string, want a list of addresses (line 18)`,
		},
	}, {
		name: "duplicate keys",
		in:   "{\"services\": {\"a\": {\"ports\": [{\"port\": 1, \"port\": 2}]},\n \"a\": {}}}",
		want: []string{
			`services["a"].ports[0].port: is given twice (first at line 1) (line 1)`,
			`services["a"]: is given twice (first at line 1) (line 2)`,
		},
	}, {
		name: "wrong kinds",
		in:   `{"services": [], "node": {"addresses": [1, null, {}], "nodePortCIDRs": "x"}}`,
		want: []string{
			`services: is a list, want an object of services by ID (line 1)`,
			`node.addresses[0]: 1 is a number, want a string (line 1)`,
			`node.addresses[1]: is null, want a string (line 1)`,
			`node.addresses[2]: is an object, want a string (line 1)`,
			`node.nodePortCIDRs: "x" is a string, want a list of prefixes (line 1)`,
		},
	}, {
		name: "numbers that are not whole",
		in:   "services:\n  a:\n    ports: [{port: 1e3}, {port: .inf}, {port: 0x10, nodePort: -1}]\n    healthCheckNodePort: 1.0\n",
		want: []string{
			`services["a"].ports[0].port: 1e3 is not a whole number (line 3)`,
			`services["a"].ports[1].port: .inf is not a whole number (line 3)`,
			`services["a"].healthCheckNodePort: 1.0 is not a whole number (line 4)`,
		},
	}, {
		name: "a service that is not an object",
		in:   "services:\n  a: 1\n  b: [x]\n",
		want: []string{
			`services["a"]: 1 is a number, want an object (a service) (line 2)`,
			`services["b"]: is a list, want an object (a service) (line 3)`,
		},
	}, {
		name: "a YAML tag",
		in:   "services:\n  a:\n    scheduler: !!binary cnI=\n",
		want: []string{`services["a"].scheduler: is a YAML value tagged !!binary, want a string (line 3)`},
	}, {
		name: "JSON syntax",
		in:   "{\"services\": {\n\"a\": {\"ports\": [}}}",
		want: []string{`line 2: invalid JSON: invalid character '}' looking for beginning of value`},
	}, {
		name: "JSON cut short",
		in:   "{\"services\": {\n",
		want: []string{`line 2: invalid JSON: unexpected end of input`},
	}, {
		name: "JSON with more after it",
		in:   "{}\n{}",
		want: []string{`line 2: invalid JSON: data after the top-level value`},
	}, {
		name: "YAML syntax",
		in:   "services:\n  a:\n    ports: [\n",
		want: []string{`line 3: invalid YAML: did not find expected node content`},
	}, {
		name: "two YAML documents",
		in:   "services: {}\n---\nservices: {}\n",
		want: []string{`line 2: a second YAML document (a State is one document)`},
	}, {
		name: "empty",
		in:   "# nothing\n",
		want: []string{`document: is empty (a State with no services is written {})`},
	}, {
		name: "not an object",
		in:   "- 1\n",
		want: []string{`document: is a list, want an object (a State) (line 1)`},
	}, {
		name: "too deep",
		in:   `{"services": {"a": {"ports": [` + strings.Repeat("[", 40),
		want: []string{`line 1: nested more than 32 levels deep`},
	}, {
		name: "aliases that grow",
		in:   "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n",
		want: []string{`line 2: too many values (YAML aliases expand to more than the document can hold)`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := DecodeState([]byte(tc.in))
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("got %+v, %v; want a *ValidationError", s, err)
			}
			if s != nil {
				t.Errorf("a State with the error: %+v", s)
			}
			var got []string
			for _, p := range ve.Problems {
				got = append(got, p.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// One errors.As catches a file's problems, whether decoding or validation
// finds them, and whether the file is read by DecodeState, DecodeValidState,
// encoding/json or the yaml package.
func TestStateErrorsAreValidationErrors(t *testing.T) {
	form := `{"services": {"web": {"ports": [{"port": "80"}]}}}`
	value := `{"services": {"web": {"ports": [{"port": 80, "nodePort": 70000}]}}}`
	var ve *ValidationError

	_, err := DecodeValidState([]byte(form), nil)
	if !errors.As(err, &ve) || ve.Problems[0].Path != `services["web"].ports[0].port` {
		t.Errorf("DecodeValidState, a problem of form: %v", err)
	}
	_, err = DecodeValidState([]byte(value), nil)
	if !errors.As(err, &ve) || ve.Problems[0].Path != `services["web"].ports[0].nodePort` || ve.Problems[0].Msg != "out of range 0-65535" {
		t.Errorf("DecodeValidState, a problem of value: %v", err)
	}
	if s, err := DecodeState([]byte(value)); err != nil || s.Services["web"].Ports[0].NodePort != 70000 {
		t.Errorf("DecodeState checked a value: %+v, %v", s, err)
	}
	if _, err := DecodeValidState([]byte(value), &Config{MaxDrain: -1}); err == nil || !strings.Contains(err.Error(), "config.maxDrain") {
		t.Errorf("DecodeValidState with an invalid Config: %v", err)
	}
	// IPv6 is not enabled by the zero Config, and is by this one.
	v6 := []byte("services:\n  a: {clusterIPs: ['2001:db8:100::1'], ports: [{port: 80}]}\n")
	if _, err := DecodeValidState(v6, nil); !errors.As(err, &ve) || !strings.Contains(err.Error(), "which the config does not enable") {
		t.Errorf("DecodeValidState, IPv6 with IPv4 only: %v", err)
	}
	if _, err := DecodeValidState(v6, &Config{Families: []Family{IPv6}}); err != nil {
		t.Errorf("DecodeValidState, IPv6 with IPv6: %v", err)
	}

	var inJSON struct{ State State }
	err = json.Unmarshal([]byte(`{"State": `+form+`}`), &inJSON)
	if !errors.As(err, &ve) || ve.Problems[0].Path != `services["web"].ports[0].port` {
		t.Errorf("encoding/json: %v", err)
	}
	var inYAML struct{ State State }
	err = yaml.Unmarshal([]byte("state:\n  services:\n    web:\n      ports: [{port: x}]\n"), &inYAML)
	if !errors.As(err, &ve) || ve.Problems[0].String() != `services["web"].ports[0].port: "x" is a string, want a number (line 4)` {
		t.Errorf("yaml: %v", err)
	}

	// null is no State, as encoding/json and the yaml package take it.
	kept := State{Services: map[string]Service{"kept": {}}}
	inJSON.State, inYAML.State = kept, kept
	if err := json.Unmarshal([]byte(`{"State": null}`), &inJSON); err != nil || inJSON.State.Services["kept"].Ports != nil || len(inJSON.State.Services) != 1 {
		t.Errorf("encoding/json, null: %v, %+v", err, inJSON.State)
	}
	if err := yaml.Unmarshal([]byte("state: null\n"), &inYAML); err != nil || len(inYAML.State.Services) != 1 {
		t.Errorf("yaml, null: %v, %+v", err, inYAML.State)
	}
	var null yaml.Node
	if err := yaml.Unmarshal([]byte("~\n"), &null); err != nil {
		t.Fatal(err)
	}
	if err := kept.UnmarshalYAML(null.Content[0]); err != nil || len(kept.Services) != 1 {
		t.Errorf("UnmarshalYAML(null): %v, %+v", err, kept)
	}
}
