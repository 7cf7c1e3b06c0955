package ipset

import (
	"bytes"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/inet"
)

// Real `ipset save` output (ipset v7.17), with the options the kernel adds.
const savedByIPSet = `create a hash:ip,port family inet hashsize 1024 maxelem 65536 timeout 0 counters comment bucketsize 12 initval 0x2eda7794
add a 198.18.0.2,udp:53 timeout 0 packets 0 bytes 0
add a 198.18.0.1,tcp:80 timeout 99 packets 3 bytes 120 comment "hi there"
create b bitmap:port range 0-65535
add b 80
create c hash:net,port family inet6 hashsize 1024 maxelem 65536 bucketsize 12 initval 0x2b18ce56
add c 2001:db8::/64,sctp:9
create d hash:ip,port,net family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x2f8b48f1
add d 198.18.0.1,tcp:1,198.18.0.0/16
create e hash:ip,port,ip family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x4c034e0a
add e 198.18.0.1,tcp:1,198.18.0.2
create f hash:net family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0xab661b48
add f 198.18.0.0/24
add f 198.18.1.1
create g hash:ip family inet6 hashsize 1024 maxelem 65536 bucketsize 12 initval 0x1804baf9
add g 2001:db8::1
`

func TestParseTextOfIPSetSave(t *testing.T) {
	sets, err := ParseText(strings.NewReader(savedByIPSet))
	if err != nil {
		t.Fatal(err)
	}
	ip := netip.MustParseAddr
	pf := netip.MustParsePrefix
	hash := func(name string, typ Type, f Family) Set {
		return Set{Name: name, Type: typ, Family: f, HashSize: 1024, MaxElem: 65536}
	}
	a := hash("a", HashIPPort, inet.IPv4)
	a.Timeouts, a.Counters, a.Comment = true, true, true
	want := []SetInfo{
		{Set: a, Entries: []Entry{
			{IP: ip("198.18.0.2"), Proto: UDP, Port: 53},
			{IP: ip("198.18.0.1"), Proto: TCP, Port: 80, Timeout: 99 * time.Second, Packets: 3, Bytes: 120, Comment: "hi there"},
		}},
		{Set: Set{Name: "b", Type: BitmapPort, PortFrom: 0, PortTo: 65535}, Entries: []Entry{{Port: 80}}},
		{Set: hash("c", HashNetPort, inet.IPv6), Entries: []Entry{{Net: pf("2001:db8::/64"), Proto: SCTP, Port: 9}}},
		{Set: hash("d", HashIPPortNet, inet.IPv4), Entries: []Entry{{IP: ip("198.18.0.1"), Proto: TCP, Port: 1, Net2: pf("198.18.0.0/16")}}},
		{Set: hash("e", HashIPPortIP, inet.IPv4), Entries: []Entry{{IP: ip("198.18.0.1"), Proto: TCP, Port: 1, IP2: ip("198.18.0.2")}}},
		{Set: hash("f", HashNet, inet.IPv4), Entries: []Entry{{Net: pf("198.18.0.0/24")}, {Net: pf("198.18.1.1/32")}}},
		{Set: hash("g", HashIP, inet.IPv6), Entries: []Entry{{IP: ip("2001:db8::1")}}},
	}
	if !reflect.DeepEqual(sets, want) {
		t.Errorf("ParseText:\n got %+v\nwant %+v", sets, want)
	}

	// What WriteText renders parses back to the same sets.
	var b bytes.Buffer
	if err := WriteText(&b, sets); err != nil {
		t.Fatal(err)
	}
	again, err := ParseText(&b)
	if err != nil {
		t.Fatalf("parsing WriteText output: %v\n%s", err, b.String())
	}
	if !reflect.DeepEqual(again, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", again, want)
	}
}

func TestWriteText(t *testing.T) {
	sets := []SetInfo{
		{Set: Set{Name: "KUBE-CLUSTER-IP", Type: HashIPPort, MaxElem: 10, Comment: true, Timeout: 5 * time.Minute},
			Entries: []Entry{{IP: netip.MustParseAddr("198.18.0.10"), Proto: UDP, Port: 53, Comment: "dns"}}},
		{Set: Set{Name: "KUBE-NODE-PORT-TCP", Type: BitmapPort}, Entries: []Entry{{Port: 30080}}},
	}
	var b bytes.Buffer
	if err := WriteText(&b, sets); err != nil {
		t.Fatal(err)
	}
	want := `create KUBE-CLUSTER-IP hash:ip,port family inet maxelem 10 timeout 300 comment
add KUBE-CLUSTER-IP 198.18.0.10,udp:53 comment "dns"
create KUBE-NODE-PORT-TCP bitmap:port range 0-65535
add KUBE-NODE-PORT-TCP 30080
`
	if b.String() != want {
		t.Errorf("WriteText:\n got %q\nwant %q", b.String(), want)
	}

	// Invalid input writes nothing.
	b.Reset()
	sets[1].Entries[0].Proto = TCP // bitmap:port takes no protocol
	err := WriteText(&b, sets)
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "sets[1].Entries[0].Proto" || b.Len() != 0 {
		t.Errorf("invalid entry: err %v, %d bytes written; want a ValidationError for sets[1].Entries[0].Proto and nothing", err, b.Len())
	}
}

func TestParseTextErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"add x 198.18.0.1", "does not create"},
		{"create x hash:ip netmask 24", "unsupported create option"},
		{"create x hash:mac", "not a supported set type"},
		{"create x hash:ip\ncreate x hash:ip", "created twice"},
		{"create x hash:ip\nadd x 198.18.0.1 nomatch", "incomplete option"},
		{"create x hash:ip\nadd x 2001:db8::1", "family"},
		{"create x hash:ip,port\nadd x 198.18.0.1,icmp:8", "unknown protocol"},
		{"create x hash:ip comment\nadd x 198.18.0.1 comment \"open", "unterminated"},
		{"create x hash:ip\nadd x 198.18.0.1 timeout 5", "no timeout extension"},
		{"flush x", "unknown command"},
	} {
		_, err := ParseText(strings.NewReader(tc.text))
		var pe *ParseError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want a ParseError containing %q", tc.text, err, tc.want)
		}
	}
}

func TestEntryValidation(t *testing.T) {
	ip := netip.MustParseAddr
	pf := netip.MustParsePrefix
	for _, tc := range []struct {
		set   Set
		e     Entry
		field string // "" means valid
	}{
		{Set{Type: HashIP}, Entry{IP: ip("198.18.0.1")}, ""},
		{Set{Type: HashIP}, Entry{IP: ip("2001:db8::1")}, "entry.IP"},
		{Set{Type: HashIP, Family: inet.IPv6}, Entry{IP: ip("::ffff:198.18.0.1")}, "entry.IP"},
		{Set{Type: HashIP}, Entry{IP: ip("198.18.0.1"), Port: 1}, "entry.Port"},
		{Set{Type: HashIP}, Entry{}, "entry.IP"},
		{Set{Type: HashIPPort}, Entry{IP: ip("198.18.0.1"), Port: 80}, "entry.Proto"},
		{Set{Type: HashIPPort}, Entry{IP: ip("198.18.0.1"), Proto: TCP, Port: 80, Timeout: time.Second}, "entry.Timeout"},
		{Set{Type: HashIPPort, Timeouts: true}, Entry{IP: ip("198.18.0.1"), Proto: TCP, Timeout: 1500 * time.Millisecond}, "entry.Timeout"},
		{Set{Type: HashIPPort, Comment: true}, Entry{IP: ip("198.18.0.1"), Proto: TCP, Comment: `a"b`}, "entry.Comment"},
		{Set{Type: HashIPPort}, Entry{IP: ip("198.18.0.1"), Proto: TCP, Packets: 1}, "entry.Packets"},
		{Set{Type: HashIPPortIP}, Entry{IP: ip("198.18.0.1"), Proto: TCP, Port: 1}, "entry.IP2"},
		{Set{Type: HashIPPortNet}, Entry{IP: ip("198.18.0.1"), Proto: TCP, Net2: pf("198.18.0.1/16")}, "entry.Net2"},
		{Set{Type: HashIPPortNet}, Entry{IP: ip("198.18.0.1"), Proto: TCP, Net2: pf("198.18.0.0/16")}, ""},
		{Set{Type: HashNet}, Entry{Net: pf("0.0.0.0/0")}, "entry.Net"},
		{Set{Type: HashNet}, Entry{IP: ip("198.18.0.1")}, "entry.IP"},
		{Set{Type: HashNetPort, Family: inet.IPv6}, Entry{Net: pf("2001:db8::/32"), Proto: SCTP, Port: 9}, ""},
		{Set{Type: BitmapPort, PortFrom: 100, PortTo: 200}, Entry{Port: 99}, "entry.Port"},
		{Set{Type: BitmapPort}, Entry{Port: 80, Proto: TCP}, "entry.Proto"},
		{Set{Type: BitmapPort}, Entry{Port: 0}, ""},
	} {
		tc.set.Name = "s"
		err := tc.set.ValidateEntry(tc.e)
		var ve *ValidationError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s %+v: unexpected error %v", tc.set.Type, tc.e, err)
		case tc.field != "" && (!errors.As(err, &ve) || ve.Field != tc.field):
			t.Errorf("%s %+v: error %v, want a ValidationError for %s", tc.set.Type, tc.e, err, tc.field)
		}
	}
}

func TestSetValidation(t *testing.T) {
	for _, tc := range []struct {
		s     Set
		field string
	}{
		{Set{Name: "", Type: HashIP}, "Name"},
		{Set{Name: strings.Repeat("x", 32), Type: HashIP}, "Name"},
		{Set{Name: "a b", Type: HashIP}, "Name"},
		{Set{Name: "a"}, "Type"},
		{Set{Name: "a", Type: BitmapPort, Family: inet.IPv4}, "Family"},
		{Set{Name: "a", Type: BitmapPort, PortFrom: 9, PortTo: 8}, "PortFrom"},
		{Set{Name: "a", Type: HashIP, PortTo: 8}, "PortFrom"},
		{Set{Name: "a", Type: HashIP, Timeout: -time.Second}, "Timeout"},
		{Set{Name: "a", Type: HashIP, Family: 7}, "Family"},
	} {
		err := tc.s.Validate()
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("%+v: error %v, want a ValidationError for %s", tc.s, err, tc.field)
		}
	}
	if err := (&Set{Name: strings.Repeat("x", 31), Type: HashNet, Family: inet.IPv6}).Validate(); err != nil {
		t.Errorf("valid set: %v", err)
	}
}

func TestParseEntry(t *testing.T) {
	for _, tc := range []struct {
		t    Type
		in   string
		want string
	}{
		{HashIPPort, "198.18.0.1,80", "198.18.0.1,tcp:80"},
		{HashIPPort, "198.18.0.1,udp:53", "198.18.0.1,udp:53"},
		{HashNet, "198.18.0.1", "198.18.0.1/32"},
		{BitmapPort, "tcp:8080", "8080"},
		{HashIPPortNet, "2001:db8::1,sctp:9,2001:db8::/48", "2001:db8::1,sctp:9,2001:db8::/48"},
	} {
		e, err := ParseEntry(tc.t, tc.in)
		if err != nil || e.format(tc.t) != tc.want {
			t.Errorf("ParseEntry(%s, %q) = %v, %v; want %s", tc.t, tc.in, e, err, tc.want)
		}
	}
	for _, bad := range []string{"198.18.0.1", "198.18.0.1,tcp:99999", "x,tcp:1", "198.18.0.1,tcp:1,2"} {
		if _, err := ParseEntry(HashIPPort, bad); err == nil {
			t.Errorf("ParseEntry(hash:ip,port, %q): no error", bad)
		}
	}
}
