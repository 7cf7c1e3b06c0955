package proxier

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// weight is read as written, 0 being a quiesced endpoint and 1 the
// default (the zero Weight); the writer leaves out the default and writes
// a quiesced endpoint as weight 0.
func TestFormatWeights(t *testing.T) {
	in := `
services:
  web:
    ports: [{name: http, port: 80, targetPort: 8080}]
    scheduler: wrr
    endpoints:
      - {addr: 198.18.1.1, ready: true}
      - {addr: 198.18.1.2, ready: true, weight: 1}
      - {addr: 198.18.1.3, ready: true, weight: 3, upperThreshold: 100, lowerThreshold: 50}
      - {addr: 198.18.1.4, ready: true, weight: 0}
`
	s, err := DecodeValidState([]byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Endpoint{
		{Addr: a("198.18.1.1"), Ready: true},
		{Addr: a("198.18.1.2"), Ready: true},
		{Addr: a("198.18.1.3"), Ready: true, Weight: 3, UpperThreshold: 100, LowerThreshold: 50},
		{Addr: a("198.18.1.4"), Ready: true, Quiesced: true},
	}
	if got := s.Services["web"].Endpoints; !reflect.DeepEqual(got, want) {
		t.Fatalf("endpoints %+v\nwant %+v", got, want)
	}
	out, err := EncodeStateYAML(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"- {addr: 198.18.1.1, ready: true}\n",
		"- {addr: 198.18.1.2, ready: true}\n",
		"- {addr: 198.18.1.3, ready: true, weight: 3, upperThreshold: 100, lowerThreshold: 50}\n",
		"- {addr: 198.18.1.4, ready: true, weight: 0}\n",
	} {
		if !strings.Contains(string(out), w) {
			t.Errorf("written without %q:\n%s", w, out)
		}
	}
	again, err := DecodeState(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Services["web"].Endpoints; !reflect.DeepEqual(got, want) {
		t.Errorf("read back as %+v\nwant %+v", got, want)
	}
}

// A weight or threshold that is not a whole number is a problem of form,
// with its line; one out of range is a problem of value.
func TestFormatWeightProblems(t *testing.T) {
	in := `{"services": {"web": {"ports": [{"port": 80}], "endpoints": [
  {"addr": "198.18.1.1", "weight": "heavy"},
  {"addr": "198.18.1.2", "weight": 1.5, "upperThreshold": true}
]}}}`
	_, err := DecodeState([]byte(in))
	want := []string{
		`services["web"].endpoints[0].weight: "heavy" is a string, want a number (line 2)`,
		`services["web"].endpoints[1].upperThreshold: true is a boolean, want a number (line 3)`,
		`services["web"].endpoints[1].weight: 1.5 is not a whole number (line 3)`,
	}
	if got := problemStrings(t, err); !sameSet(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	in = "services:\n  web:\n    ports: [{port: 80}]\n    endpoints:\n      - {addr: 198.18.1.1, weight: 70000, lowerThreshold: 5}\n"
	_, err = DecodeValidState([]byte(in), nil)
	want = []string{
		`services["web"].endpoints[0].weight: 70000 out of range 0-65535 (0 means 1; Quiesced, or weight: 0 in a file, gives weight 0) (line 5)`,
		`services["web"].endpoints[0].lowerThreshold: 5 is set without an upperThreshold (the kernel refuses a lower threshold above the upper one) (line 5)`,
	}
	if got := problemStrings(t, err); !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Random States with weights, quiesced endpoints and thresholds read back
// as written (a Weight of 1 aside, which is written as the default).
func TestFormatRoundTripWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 1))
	for range 100 {
		st := State{Services: map[string]Service{}}
		for i := range 1 + rng.IntN(4) {
			svc := genService(rng, i)
			for j := range svc.Endpoints {
				e := &svc.Endpoints[j]
				switch rng.IntN(4) {
				case 0:
					e.Quiesced = true
				case 1:
					e.Weight = 2 + rng.IntN(MaxWeight-1)
				}
				if rng.IntN(3) == 0 {
					e.UpperThreshold = rng.IntN(MaxThreshold)
					e.LowerThreshold = rng.IntN(e.UpperThreshold + 1)
				}
			}
			st.Services[string(rune('a'+i))] = svc
		}
		roundTrip(t, &st)
	}
}
