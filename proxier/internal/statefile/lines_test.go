package statefile

import "testing"

// Lines place a path at its value, or at the nearest enclosing value the
// document gives; service IDs with dots, brackets and quotes are one step.
func TestLinesOf(t *testing.T) {
	doc := `services:
  'a.b["c"]':
    clusterIPs: [198.18.100.1]
    ports:
      - name: http
        port: 80
  web:
    endpoints:
      - addr: 198.18.1.1
`
	s, problems, lines := DecodeAt([]byte(doc), "")
	if len(problems) > 0 || len(s.Services) != 2 {
		t.Fatalf("%+v, %+v", s, problems)
	}
	for path, want := range map[string]int{
		`services`:                                   1,
		`services["a.b[\"c\"]"]`:                     2,
		`services["a.b[\"c\"]"].clusterIPs[0]`:       3,
		`services["a.b[\"c\"]"].ports[0]`:            5,
		`services["a.b[\"c\"]"].ports[0].port`:       6,
		`services["a.b[\"c\"]"].ports[0].targetPort`: 5, // a default: the port's line
		`services["a.b[\"c\"]"].scheduler`:           2,
		`services["web"].ports`:                      7,
		`services["web"].endpoints[0].ports["http"]`: 9,
		`services["web"].endpoints[3].addr`:          8,
		`node.addresses[0]`:                          0,
		``:                                           0,
	} {
		if got := lines.Of(path); got != want {
			t.Errorf("line of %s: %d, want %d", path, got, want)
		}
	}
}

// DecodeAt returns what it could read beside the problems of form: the
// zero value stands in for a value of the wrong form.
func TestDecodeAtKeepsWhatItRead(t *testing.T) {
	s, problems, _ := DecodeAt([]byte("services:\n  web: {ports: [{port: x}, {port: 81}]}\n  db: [1]\n"), "")
	if len(problems) != 2 || s == nil || len(s.Services) != 1 || len(s.Services["web"].Ports) != 2 || s.Services["web"].Ports[1].Port != 81 {
		t.Errorf("%+v, %+v", s, problems)
	}
	if s, problems, _ := DecodeAt([]byte("{"), ""); s != nil || len(problems) != 1 {
		t.Errorf("a problem of syntax: %+v, %+v", s, problems)
	}
}
