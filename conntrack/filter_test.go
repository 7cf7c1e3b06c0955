package conntrack

import (
	"errors"
	"net/netip"
	"testing"
)

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }
func addr(s string) netip.Addr   { return netip.MustParseAddr(s) }

// flow is a flow from client to vip answered by backend, as IPVS masquerade
// leaves it: the reply goes from backend back to the client.
func flow(p Protocol, client, vip, backend string) Flow {
	c := ap(client)
	return Flow{Protocol: p, Original: Tuple{Src: c, Dst: ap(vip)}, Reply: Tuple{Src: ap(backend), Dst: c}}
}

func TestFilterValidate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		f         Filter
		field, rs string // "" = valid
	}{
		{"protocol only", Filter{Protocol: UDP}, "", ""},
		{"everything", Filter{Protocol: SCTP, Addr: addr("198.18.100.1"), Port: 53, Keep: []netip.AddrPort{ap("198.18.1.1:53"), ap("198.18.1.2:0")}}, "", ""},
		{"IPv6", Filter{Protocol: TCP, Addr: addr("2001:db8::1"), Keep: []netip.AddrPort{ap("[2001:db8::2]:1")}}, "", ""},
		{"keep only", Filter{Protocol: UDP, Keep: []netip.AddrPort{ap("198.18.1.1:53")}}, "", ""},
		{"zero protocol", Filter{Addr: addr("198.18.100.1")}, "filters[3].Protocol", "must be TCP, UDP or SCTP"},
		{"ICMP", Filter{Protocol: 1}, "filters[3].Protocol", "must be TCP, UDP or SCTP"},
		{"mixed families", Filter{Protocol: UDP, Addr: addr("198.18.100.1"), Keep: []netip.AddrPort{ap("198.18.1.1:53"), ap("[2001:db8::1]:53")}},
			"filters[3].Keep[1]", "is IPv6 in a filter whose addresses are IPv4"},
		{"mixed families, keep first", Filter{Protocol: UDP, Addr: addr("2001:db8::1"), Keep: []netip.AddrPort{ap("198.18.1.1:53")}},
			"filters[3].Keep[0]", "is IPv4 in a filter whose addresses are IPv6"},
		{"mapped address", Filter{Protocol: UDP, Addr: addr("::ffff:198.18.100.1")}, "filters[3].Addr", "an IPv4-mapped IPv6 address: give the IPv4 address"},
		{"zone", Filter{Protocol: UDP, Addr: addr("fe80::1%eth0")}, "filters[3].Addr", "has a zone"},
		{"zero keep", Filter{Protocol: UDP, Keep: []netip.AddrPort{{}}}, "filters[3].Keep[0]", "the zero address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateFilters([]Filter{{Protocol: UDP}, {Protocol: TCP}, {Protocol: SCTP}, tc.f})
			if tc.field == "" {
				if err != nil {
					t.Fatalf("valid filter refused: %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Field != tc.field || ve.Reason != tc.rs {
				t.Fatalf("err = %v, want a *ValidationError on %s: %s", err, tc.field, tc.rs)
			}
		})
	}
}

func TestFilterMatches(t *testing.T) {
	stale := flow(UDP, "198.18.20.2:40000", "198.18.100.1:53", "198.18.11.2:5353")
	live := flow(UDP, "198.18.20.2:40001", "198.18.100.1:53", "198.18.12.2:5353")
	otherPort := flow(UDP, "198.18.20.2:40002", "198.18.100.1:53", "198.18.12.2:9999")
	v6 := flow(UDP, "[2001:db8:20::2]:40000", "[2001:db8:100::1]:53", "[2001:db8:11::2]:5353")
	tcp := flow(TCP, "198.18.20.2:40000", "198.18.100.1:53", "198.18.11.2:5353")
	otherVIP := flow(UDP, "198.18.20.2:40000", "198.18.100.2:53", "198.18.11.2:5353")
	otherVIPPort := flow(UDP, "198.18.20.2:40000", "198.18.100.1:54", "198.18.11.2:5353")

	keepB := Filter{Protocol: UDP, Addr: addr("198.18.100.1"), Port: 53, Keep: []netip.AddrPort{ap("198.18.12.2:5353")}}
	keepBAnyPort := Filter{Protocol: UDP, Addr: addr("198.18.100.1"), Port: 53, Keep: []netip.AddrPort{ap("198.18.12.2:0")}}
	allToVIP := Filter{Protocol: UDP, Addr: addr("198.18.100.1")}
	anyAddrPort53 := Filter{Protocol: UDP, Port: 53}
	keepOnlyV4 := Filter{Protocol: UDP, Keep: []netip.AddrPort{ap("198.18.12.2:5353")}}
	for _, tc := range []struct {
		name string
		f    Filter
		fl   Flow
		want bool
	}{
		{"stale reply source", keepB, stale, true},
		{"live reply source", keepB, live, false},
		{"live address, other port", keepB, otherPort, true},
		{"keep with port 0 keeps any port", keepBAnyPort, otherPort, false},
		{"other protocol", keepB, tcp, false},
		{"other VIP", keepB, otherVIP, false},
		{"other VIP port", keepB, otherVIPPort, false},
		{"other family", keepB, v6, false},
		{"no port: every port of the VIP", allToVIP, otherVIPPort, true},
		{"no keep: live ones too", allToVIP, live, true},
		{"no address: every VIP", anyAddrPort53, otherVIP, true},
		{"no address: both families", anyAddrPort53, v6, true},
		{"no address but IPv4 keeps: IPv4 only", keepOnlyV4, v6, false},
		{"no address but IPv4 keeps: kept", keepOnlyV4, live, false},
		{"no address but IPv4 keeps: deleted", keepOnlyV4, stale, true},
	} {
		if got := tc.f.Matches(tc.fl); got != tc.want {
			t.Errorf("%s: Matches(%v) = %v, want %v", tc.name, tc.fl, got, tc.want)
		}
	}
}

func TestFamilies(t *testing.T) {
	for _, tc := range []struct {
		fs   []Filter
		want []Family
	}{
		{nil, nil},
		{[]Filter{{Protocol: UDP, Addr: addr("198.18.0.1")}}, []Family{IPv4}},
		{[]Filter{{Protocol: UDP, Addr: addr("2001:db8::1")}}, []Family{IPv6}},
		{[]Filter{{Protocol: UDP, Keep: []netip.AddrPort{ap("[2001:db8::1]:1")}}}, []Family{IPv6}},
		{[]Filter{{Protocol: UDP, Addr: addr("2001:db8::1")}, {Protocol: UDP, Addr: addr("198.18.0.1")}}, []Family{IPv4, IPv6}},
		{[]Filter{{Protocol: UDP, Port: 53}}, []Family{IPv4, IPv6}},
	} {
		got := families(tc.fs)
		if len(got) != len(tc.want) || len(got) > 0 && (got[0] != tc.want[0] || got[len(got)-1] != tc.want[len(tc.want)-1]) {
			t.Errorf("families(%v) = %v, want %v", tc.fs, got, tc.want)
		}
	}
}

func TestFlowString(t *testing.T) {
	got := flow(UDP, "198.18.20.2:40000", "198.18.100.1:53", "198.18.11.2:5353").String()
	want := "udp src=198.18.20.2 dst=198.18.100.1 sport=40000 dport=53 src=198.18.11.2 dst=198.18.20.2 sport=5353 dport=40000"
	if got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestFilterValidateNamesTheField(t *testing.T) {
	f := Filter{Protocol: UDP, Keep: []netip.AddrPort{ap("198.18.1.1:1"), ap("[2001:db8::1]:1")}}
	var ve *ValidationError
	if err := f.Validate(); !errors.As(err, &ve) || ve.Field != "Keep[1]" || ve.Value != "2001:db8::1" {
		t.Errorf("Validate = %v, want a *ValidationError on Keep[1]", err)
	}
}
