package proxier

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier/internal/statefile"
	"go.yaml.in/yaml/v3"
)

// fullState sets every field of every struct of a State, so that a field
// the text form drops fails the round trip.
func fullState() State {
	return State{
		Services: map[string]Service{
			"default/web": {
				ClusterIPs:               []netip.Addr{a("198.18.100.1"), a("2001:db8:100::1")},
				IPFamilies:               []Family{IPv6, IPv4},
				Ports:                    []Port{{Name: "http", Protocol: SCTP, Port: 80, TargetPort: 8080, NodePort: 30080}},
				ExternalIPs:              []netip.Addr{a("198.18.102.1")},
				LoadBalancerIPs:          []netip.Addr{a("2001:db8:103::1")},
				LoadBalancerSourceRanges: []netip.Prefix{netip.MustParsePrefix("198.18.20.0/24")},
				SessionAffinity:          &SessionAffinity{Timeout: 90 * time.Minute, IPv4PrefixLen: 24, IPv6PrefixLen: 64},
				ExternalTrafficPolicy:    Local,
				InternalTrafficPolicy:    Local,
				Scheduler:                "mh",
				SchedulerFlags:           ipvs.MHPort | ipvs.SchedFlag3,
				OnePacket:                true,
				FirewallMark:             0x10,
				HealthCheckNodePort:      32000,
				Forward:                  ipvs.Tunnel,
				Tunnel:                   Tunnel{Type: ipvs.GUE, Port: 6080, Flags: ipvs.TunnelRemCsum},
				Endpoints: []Endpoint{{Addr: a("198.18.1.1"), Ports: map[string]int{"http": 9000},
					Ready: true, Serving: true, Terminating: true, Local: true, Weight: 7, UpperThreshold: 100, LowerThreshold: 50},
					{Addr: a("198.18.1.2"), Ready: true, Quiesced: true}},
			},
		},
		Node: Node{Addresses: []netip.Addr{a("198.18.0.10")}, NodePortCIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")}},
	}
}

// allSet fails t for every field, in v and the values it holds, that is
// zero.
func allSet(t *testing.T, path string, v reflect.Value) {
	t.Helper()
	if v.IsZero() {
		t.Errorf("%s is zero in fullState: set it there, and give it a name in the text form", path)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		allSet(t, path, v.Elem())
	case reflect.Slice:
		allSet(t, path+"[0]", v.Index(0))
	case reflect.Map:
		it := v.MapRange()
		it.Next()
		allSet(t, path+"[k]", it.Value())
	case reflect.Struct:
		if v.Type().PkgPath() != "github.com/ipvskit/ipvskit/proxier" {
			return // netip.Addr, ...
		}
		for i := range v.NumField() {
			if textless[v.Type().Name()+"."+v.Type().Field(i).Name] {
				continue
			}
			allSet(t, path+"."+v.Type().Field(i).Name, v.Field(i))
		}
	}
}

// textless are the fields the text form writes as another's value, not
// with a name of their own: fullState sets them elsewhere than in the
// first item of a list.
var textless = map[string]bool{
	"Endpoint.Quiesced": true, // weight: 0 (format_endpoint.go)
}

// The names of each object's fields in the text form, in order.
var (
	stateFields    = statefile.Fields("state")
	nodeFields     = statefile.Fields("node")
	serviceFields  = statefile.Fields("service")
	portFields     = statefile.Fields("port")
	endpointFields = statefile.Fields("endpoint")
	affinityFields = statefile.Fields("sessionAffinity")
	tunnelFields   = statefile.Fields("tunnel")
)

// Every field of the State's structs has a name in the text form, and the
// name is the Go name in lower camel case: a field added to a struct
// without the form knowing it fails here.
func TestFormatCoversEveryField(t *testing.T) {
	full := fullState()
	allSet(t, "State", reflect.ValueOf(full))
	for _, tc := range []struct {
		typ    reflect.Type
		fields []string
	}{
		{reflect.TypeFor[State](), stateFields},
		{reflect.TypeFor[Node](), nodeFields},
		{reflect.TypeFor[Service](), serviceFields},
		{reflect.TypeFor[Port](), portFields},
		{reflect.TypeFor[Endpoint](), endpointFields},
		{reflect.TypeFor[SessionAffinity](), affinityFields},
	} {
		var want []string
		for f := range tc.typ.Fields() {
			if textless[tc.typ.Name()+"."+f.Name] {
				continue
			}
			r := []rune(strings.Replace(f.Name, "IPv", "ipv", 1)) // IPv4PrefixLen: ipv4PrefixLen
			for i := 0; i < len(r) && unicode.IsUpper(r[i]); i++ {
				if i == 0 || i+1 == len(r) || unicode.IsUpper(r[i+1]) {
					r[i] = unicode.ToLower(r[i])
				}
			}
			want = append(want, string(r))
		}
		if !slices.Equal(tc.fields, want) {
			t.Errorf("%v: the text form's fields are %q, want %q (the Go fields, in order)", tc.typ, tc.fields, want)
		}
	}
	js, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(js, &generic); err != nil {
		t.Fatal(err)
	}
	svc := generic["services"].(map[string]any)["default/web"].(map[string]any)
	for _, tc := range []struct {
		obj    any
		fields []string
	}{
		{generic, stateFields},
		{generic["node"], nodeFields},
		{svc, serviceFields},
		{svc["ports"].([]any)[0], portFields},
		{svc["endpoints"].([]any)[0], endpointFields},
		{svc["sessionAffinity"], affinityFields},
		{svc["tunnel"], tunnelFields},
	} {
		var keys []string
		for k := range tc.obj.(map[string]any) {
			keys = append(keys, k)
		}
		if !sameSet(keys, tc.fields) {
			t.Errorf("encoded as %q, want the fields %q", keys, tc.fields)
		}
	}
	roundTrip(t, &full)
}

// emptyToNil sets every empty slice and map in v, a settable value, to nil.
func emptyToNil(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			emptyToNil(v.Elem())
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.SetZero()
		}
		for i := range v.Len() {
			emptyToNil(v.Index(i))
		}
	case reflect.Map:
		if v.Len() == 0 {
			v.SetZero()
			return
		}
		it := v.MapRange()
		for it.Next() {
			e := reflect.New(it.Value().Type()).Elem()
			e.Set(it.Value())
			emptyToNil(e)
			v.SetMapIndex(it.Key(), e)
		}
	case reflect.Struct:
		if v.Type().PkgPath() != "github.com/ipvskit/ipvskit/proxier" {
			return
		}
		for i := range v.NumField() {
			emptyToNil(v.Field(i))
		}
	}
}

func sameSet(x, y []string) bool {
	x, y = slices.Sorted(slices.Values(x)), slices.Sorted(slices.Values(y))
	return slices.Equal(x, y)
}

// roundTrip holds every way of writing s to reading it back as s: JSON
// and YAML through DecodeState, and encoding/json and the yaml package
// with s inside another value. The text form does not tell an empty list
// or map from none (both mean none): s's empty ones are made nil first.
func roundTrip(t *testing.T, s *State) {
	t.Helper()
	emptyToNil(reflect.ValueOf(s).Elem())
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	ys, err := EncodeStateYAML(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range [][]byte{js, ys} {
		got, err := DecodeState(text)
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("read back differently:\n%s\n got %+v\nwant %+v", text, got, s)
		}
	}
	type file struct {
		Version int
		State   State
	}
	js, err = json.Marshal(file{1, *s})
	if err != nil {
		t.Fatal(err)
	}
	var fj file
	if err := json.Unmarshal(js, &fj); err != nil || !reflect.DeepEqual(&fj.State, s) {
		t.Fatalf("encoding/json: %v, read back as %+v\n%s", err, fj.State, js)
	}
	ys, err = yaml.Marshal(file{1, *s})
	if err != nil {
		t.Fatal(err)
	}
	var fy file
	if err := yaml.Unmarshal(ys, &fy); err != nil || !reflect.DeepEqual(&fy.State, s) {
		t.Fatalf("yaml: %v, read back as %+v\n%s", err, fy.State, ys)
	}
}

// Random States from the Update walk's generator, with the schedulers and
// flags it leaves out, read back as written.
func TestFormatRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 1))
	scheds := []struct {
		name  string
		flags []ipvs.SchedFlags
	}{
		{"sh", []ipvs.SchedFlags{ipvs.SHFallback, ipvs.SHPort, ipvs.SchedFlag3}},
		{"mh", []ipvs.SchedFlags{ipvs.MHFallback, ipvs.MHPort}},
		{"rr", []ipvs.SchedFlags{ipvs.SchedFlag1, ipvs.SchedFlag2, ipvs.SchedFlag3}},
		{"", []ipvs.SchedFlags{ipvs.SchedFlag2}},
	}
	for range 200 {
		st := State{}
		if rng.IntN(2) == 0 {
			st.Node = dualStackNode
		}
		for i := range rng.IntN(6) {
			svc := genService(rng, i)
			if rng.IntN(3) == 0 {
				sc := scheds[rng.IntN(len(scheds))]
				svc.Scheduler = sc.name
				for _, f := range sc.flags {
					if rng.IntN(2) == 0 {
						svc.SchedulerFlags |= f
					}
				}
			}
			if svc.SessionAffinity != nil && rng.IntN(2) == 0 {
				svc.SessionAffinity.Timeout += time.Duration(rng.IntN(86400)) * time.Second
			}
			if st.Services == nil {
				st.Services = map[string]Service{}
			}
			st.Services[fmt.Sprintf("ns-%d/svc-%d", rng.IntN(3), i)] = svc
		}
		roundTrip(t, &st)
	}
}

// Words are read in any case and written as the constants; durations are
// Go durations or seconds, and written as the shortest Go form.
func TestDecodeStateWords(t *testing.T) {
	in := `
services:
  s:
    ports:
      - {name: a, protocol: tcp, port: 1}
      - {name: b, protocol: Udp, port: 2}
      - {name: c, protocol: sctp, port: 3}
      - {name: d, port: 4}
    externalTrafficPolicy: local
    internalTrafficPolicy: CLUSTER
    scheduler: sh
    schedulerFlags: [SH-Port, flag-3]
    sessionAffinity: {timeout: 600}
  t:
    ports: [{port: 5}]
    externalTrafficPolicy: LOCAL
    internalTrafficPolicy: Local
    sessionAffinity: {timeout: 1.5}
  u:
    ports: [{port: 6}]
    sessionAffinity: {timeout: 3h}
  v:
    ports: [{port: 7}]
    sessionAffinity: {timeout: "90m"}
`
	s, err := DecodeState([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var protos []Protocol
	for _, p := range s.Services["s"].Ports {
		protos = append(protos, p.Protocol)
	}
	if want := []Protocol{TCP, UDP, SCTP, TCP}; !slices.Equal(protos, want) {
		t.Errorf("protocols %q, want %q", protos, want)
	}
	for id, want := range map[string][2]TrafficPolicy{"s": {Local, Cluster}, "t": {Local, Local}, "u": {Cluster, Cluster}} {
		if got := s.Services[id]; got.ExternalTrafficPolicy != want[0] || got.InternalTrafficPolicy != want[1] {
			t.Errorf("%s: policies %v, %v; want %v", id, got.ExternalTrafficPolicy, got.InternalTrafficPolicy, want)
		}
	}
	if got := s.Services["s"].SchedulerFlags; got != ipvs.SHPort|ipvs.SchedFlag3 {
		t.Errorf("flags %v, want sh-port and flag-3", got)
	}
	want := map[string]string{"s": "10m", "t": "1.5s", "u": "3h", "v": "1h30m"}
	for id, w := range want {
		a := s.Services[id].SessionAffinity
		if a == nil {
			t.Fatalf("%s: no session affinity", id)
		}
		if got, _ := statefile.Duration(a.Timeout).MarshalText(); string(got) != w {
			t.Errorf("%s: timeout %v written as %q, want %q", id, a.Timeout, got, w)
		}
	}
	if got := s.Services["s"].SessionAffinity.Timeout; got != 10*time.Minute {
		t.Errorf("600 read as %v, want 10m", got)
	}
	out, err := EncodeStateYAML(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"protocol: UDP", "externalTrafficPolicy: Local", "schedulerFlags: [sh-port, flag-3]", "sessionAffinity: {timeout: 10m}", "sessionAffinity: {timeout: 1h30m}"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("written without %q:\n%s", w, out)
		}
	}
	if strings.Contains(string(out), "Cluster") {
		t.Errorf("the default policy is written:\n%s", out)
	}
}

// Absent, null and empty values are the zero value; a State without
// services is {}.
func TestDecodeStateZeroValues(t *testing.T) {
	for _, in := range []string{`{}`, `{"services": null}`, `{"services": {}, "node": {"addresses": []}}`, "services: {}\n", "node:\n"} {
		s, err := DecodeState([]byte(in))
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if !reflect.DeepEqual(s, &State{}) {
			t.Errorf("%q read as %+v, want the zero State", in, s)
		}
	}
	s, err := DecodeState([]byte(`{"services": {"x": {"ports": [{"port": 1}], "sessionAffinity": {}, "clusterIPs": null, "endpoints": [{"addr": "198.18.1.1", "ports": {}}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Service{Ports: []Port{{Protocol: TCP, Port: 1}}, SessionAffinity: &SessionAffinity{}, Endpoints: []Endpoint{{Addr: a("198.18.1.1")}}}
	if got := s.Services["x"]; !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	roundTrip(t, s)
}
