package inet

import (
	"encoding/json"
	"testing"
)

// In JSON (and any encoding that uses encoding.TextMarshaler) a Family and
// a Protocol are words, read in any case.
func TestText(t *testing.T) {
	type doc struct {
		Families  []Family
		Protocols []Protocol
	}
	b, err := json.Marshal(doc{[]Family{IPv4, IPv6}, []Protocol{TCP, UDP, SCTP}})
	if want := `{"Families":["IPv4","IPv6"],"Protocols":["tcp","udp","sctp"]}`; err != nil || string(b) != want {
		t.Fatalf("Marshal = %s, %v; want %s", b, err, want)
	}
	var d doc
	if err := json.Unmarshal([]byte(`{"Families":["ipv4","INET6","4"],"Protocols":["TCP","Udp","sctp"]}`), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Families) != 3 || d.Families[0] != IPv4 || d.Families[1] != IPv6 || d.Families[2] != IPv4 ||
		len(d.Protocols) != 3 || d.Protocols[0] != TCP || d.Protocols[1] != UDP || d.Protocols[2] != SCTP {
		t.Errorf("Unmarshal = %+v", d)
	}
	for _, in := range []string{`{"Families":["ipv5"]}`, `{"Protocols":["tcpx"]}`, `{"Families":[""]}`} {
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("Unmarshal(%s) accepted", in)
		}
	}
	for _, v := range []any{Family(0), Family(7), Protocol(0), Protocol(250)} {
		if b, err := json.Marshal(v); err == nil {
			t.Errorf("Marshal(%#v) = %s, want an error", v, b)
		}
	}
}
