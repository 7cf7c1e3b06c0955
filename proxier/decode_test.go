package proxier

import (
	"errors"
	"strings"
	"testing"
)

// problemLines returns the problems of err, one String each.
func problemLines(t *testing.T, err error) []string {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want a *ValidationError", err)
	}
	var out []string
	for _, p := range ve.Problems {
		out = append(out, p.String())
	}
	return out
}

func wantProblems(t *testing.T, err error, want ...string) {
	t.Helper()
	if got := problemLines(t, err); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Problems that validation finds after decoding carry the line of their
// value, or of the value that encloses a default the file leaves out; the
// problems of form and of value are listed in one pass, without those that
// would be about the zero value standing in for a value of the wrong form.
func TestDecodeValidStateLines(t *testing.T) {
	yml := `services:
  web:
    clusterIPs: [198.18.100.1]
    ports:
      - {name: http, port: 80, nodePort: 70000}
    endpoints:
      - {addr: 198.18.1.1, ready: true}
      - {addr: 198.18.300.1, ready: true}
  db:
    clusterIPs: [198.18.100.2]
  api:
    clusterIPs: [198.18.100.3]
    Ports: [{port: 80}]
  dup:
    clusterIPs: [198.18.100.1]
    ports:
      - {name: http, port: 80}
`
	_, err := DecodeValidState([]byte(yml), nil)
	wantProblems(t, err,
		`services["web"].endpoints[1].addr: "198.18.300.1" is not an IP address (line 8)`,
		`services["api"].Ports: is not a field of a service (did you mean ports?) (line 13)`,
		`services["db"].ports: is empty (a service needs at least one port) (line 9)`,
		`services["web"].ports[0].nodePort: 70000 out of range 0-65535 (line 5)`,
		`services["web"].ports[0]: 198.18.100.1:80/TCP is already served by services["dup"].ports[0] (line 5)`,
	)

	json := `{"services": {
  "web": {
    "clusterIPs": ["198.18.100.1"],
    "ports": [
      {"port": 80,
       "targetPort": -1}]}}}`
	_, err = DecodeValidState([]byte(json), nil)
	wantProblems(t, err, `services["web"].ports[0].targetPort: -1 out of range 0-65535 (line 6)`)

	if s, err := DecodeValidState([]byte("services:\n  web: {clusterIPs: [198.18.100.1], ports: [{port: 80}]}\n"), nil); err != nil || len(s.Services) != 1 {
		t.Errorf("a valid State: %+v, %v", s, err)
	}
}

// A State under a key of a larger file: the rest of the file is not
// read, paths start with the key, lines are the file's.
func TestDecodeStateWithKey(t *testing.T) {
	yml := `listen: 198.18.0.1:8080
lb:
  state:
    services:
      web:
        clusterIPs: [198.18.100.1]
        ports: [{port: 80, protocol: ICMP}, {name: b, port: 0}]
`
	_, err := DecodeStateWith([]byte(yml), &DecodeOptions{Key: "lb.state", Validate: true})
	wantProblems(t, err,
		`lb.state.services["web"].ports[0].protocol: "ICMP" is not TCP, UDP or SCTP (line 7)`,
		`lb.state.services["web"].ports[0].name: "" is empty in a service with several ports (line 7)`,
		`lb.state.services["web"].ports[1].port: 0 out of range 1-65535 (line 7)`,
	)
	// Decoding alone does not validate.
	ok := "state:\n  services:\n    web: {clusterIPs: [198.18.100.1], ports: [{port: 0}]}\nother: [1, 2]\n"
	if s, err := DecodeStateWith([]byte(ok), &DecodeOptions{Key: "state"}); err != nil || len(s.Services) != 1 {
		t.Errorf("decoding alone: %+v, %v", s, err)
	}
	_, err = DecodeStateWith([]byte(ok), &DecodeOptions{Key: "state", Validate: true, Config: &Config{}})
	wantProblems(t, err, `state.services["web"].ports[0].port: 0 out of range 1-65535 (line 3)`)

	json := "{\"name\": \"lb\",\n \"state\": {\"services\": {\"web\": {\n  \"ports\": [{\"port\": \"80\"}]}}}}"
	_, err = DecodeStateWith([]byte(json), &DecodeOptions{Key: "state", Validate: true})
	wantProblems(t, err, `state.services["web"].ports[0].port: "80" is a string, want a number (line 3)`)

	for _, tc := range []struct{ doc, key, want string }{
		{"other: 1\n", "state", `state: is missing (the State is read from there) (line 1)`},
		{"state: ~\n", "state", `state: is missing (the State is read from there) (line 1)`},
		{"lb: [1]\n", "lb.state", `lb: is a list, want an object with the key state (line 1)`},
		{"state: [1]\n", "state", `state: is a list, want an object (a State) (line 1)`},
		{"state: {Services: {}}\n", "state", `state.Services: is not a field of a State (did you mean services?) (line 1)`},
	} {
		_, err := DecodeStateWith([]byte(tc.doc), &DecodeOptions{Key: tc.key})
		wantProblems(t, err, tc.want)
	}
	if _, err := DecodeStateWith([]byte("{}"), &DecodeOptions{Validate: true, Config: &Config{MaxDrain: -1}}); err == nil || !strings.Contains(err.Error(), "config.maxDrain") {
		t.Errorf("an invalid Config: %v", err)
	}
	if s, err := DecodeStateWith([]byte("{}"), nil); err != nil || len(s.Services) != 0 {
		t.Errorf("nil options: %+v, %v", s, err)
	}
}
