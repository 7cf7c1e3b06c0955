package statefile

import (
	"net/netip"
	"reflect"
	"testing"
	"time"
)

// The package alone, without proxier: one document read from JSON and from
// YAML gives the same values, with words in their canonical case, and YAML
// written from them reads back the same.
func TestDecodeBothSyntaxes(t *testing.T) {
	js := `{"services": {"web": {"clusterIPs": ["198.18.100.1"], "scheduler": "sh", "schedulerFlags": ["SH-PORT"],
  "ports": [{"name": "http", "protocol": "tcp", "port": 80}], "externalTrafficPolicy": "local",
  "sessionAffinity": {"timeout": 600}, "endpoints": [{"addr": "198.18.1.1", "ready": true}]}}}`
	yml := `services:
  web:
    clusterIPs: [198.18.100.1]
    ports:
      - {name: http, protocol: TCP, port: 80}
    sessionAffinity: {timeout: 10m}
    externalTrafficPolicy: Local
    scheduler: sh
    schedulerFlags: [sh-port]
    endpoints:
      - {addr: 198.18.1.1, ready: true}
`
	want := &State{Services: map[string]Service{"web": {
		ClusterIPs:            []netip.Addr{netip.MustParseAddr("198.18.100.1")},
		Scheduler:             "sh",
		SchedulerFlags:        []string{"sh-port"},
		Ports:                 []Port{{Name: "http", Protocol: "TCP", Port: 80}},
		ExternalTrafficPolicy: "Local",
		SessionAffinity:       &Affinity{Timeout: Duration(10 * time.Minute)},
		Endpoints:             []Endpoint{{Addr: netip.MustParseAddr("198.18.1.1"), Ready: true}},
	}}}
	for name, text := range map[string]string{"JSON": js, "YAML": yml} {
		got, problems := Decode([]byte(text))
		if len(problems) > 0 {
			t.Fatalf("%s: %v", name, problems)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
	}
	out, err := EncodeYAML(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != yml {
		t.Errorf("written as:\n%s\nwant:\n%s", out, yml)
	}
}

// Problems carry the path and the line, every one of them.
func TestDecodeProblems(t *testing.T) {
	_, problems := Decode([]byte("services:\n  web:\n    ports:\n      - {protocol: ICMP, port: x}\n"))
	want := []Problem{
		{Path: `services["web"].ports[0].protocol`, Value: `"ICMP"`, Msg: "is not TCP, UDP or SCTP", Line: 4},
		{Path: `services["web"].ports[0].port`, Value: `"x"`, Msg: "is a string, want a number", Line: 4},
	}
	if !reflect.DeepEqual(problems, want) {
		t.Errorf("got %+v, want %+v", problems, want)
	}
	if _, problems := Decode(nil); len(problems) != 1 || problems[0].Path != "document" {
		t.Errorf("an empty document: %+v, want one problem of the document", problems)
	}
}
