package proxier

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/ipvs"
)

// knobsService is a dual-stack service with a TCP and a UDP port, client
// affinity by /24 and /64, and one-packet scheduling.
func knobsService() Service {
	return Service{
		ClusterIPs:      []netip.Addr{a("198.18.100.1"), a("2001:db8:100::1")},
		Ports:           []Port{{Name: "dns", Protocol: UDP, Port: 53}, {Name: "dns-tcp", Protocol: TCP, Port: 53}},
		SessionAffinity: &SessionAffinity{Timeout: time.Minute, IPv4PrefixLen: 24, IPv6PrefixLen: 64},
		OnePacket:       true,
		Endpoints:       []Endpoint{{Addr: a("198.18.1.1"), Ready: true}, {Addr: a("2001:db8:1::1"), Ready: true}},
	}
}

func TestKnobsValidation(t *testing.T) {
	s := knobsService()
	s.SessionAffinity.IPv4PrefixLen, s.SessionAffinity.IPv6PrefixLen = 33, -1
	s.Ports = s.Ports[1:] // TCP only
	err := (&State{Services: map[string]Service{"dns": s}}).Validate(&Config{Families: []Family{IPv4, IPv6}})
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err %v, want a *ValidationError", err)
	}
	var got []string
	for _, p := range ve.Problems {
		got = append(got, p.String())
	}
	want := []string{
		`services["dns"].sessionAffinity.ipv4PrefixLen: 33 out of range 0-32`,
		`services["dns"].sessionAffinity.ipv6PrefixLen: -1 out of range 0-128`,
		`services["dns"].onePacket: true is set on a service without a UDP port (one-packet scheduling is for UDP)`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, n := range []int{0, 32} {
		ok := knobsService()
		ok.SessionAffinity.IPv4PrefixLen, ok.SessionAffinity.IPv6PrefixLen = n, 4*n
		if err := (&State{Services: map[string]Service{"dns": ok}}).Validate(&Config{Families: []Family{IPv4, IPv6}}); err != nil {
			t.Errorf("prefix lengths %d and %d: %v", n, 4*n, err)
		}
	}
}

// The knobs reach each virtual server of their family (one-packet the UDP
// ones only), as the kernel reads them back (a whole-address prefix is 0).
func TestKnobsVirtualServers(t *testing.T) {
	s := knobsService()
	for _, tc := range []struct {
		proto      Protocol
		addr       string
		prefix     uint8
		onePacket  bool
		fullPrefix uint8
	}{
		{UDP, "198.18.100.1", 24, true, 0},
		{TCP, "198.18.100.1", 24, false, 0},
		{UDP, "2001:db8:100::1", 64, true, 0},
		{TCP, "2001:db8:100::1", 64, false, 0},
	} {
		v := virtualService(&s, tc.proto, a(tc.addr), 53)
		if v.Persistence.PrefixLen != tc.prefix || v.OnePacket != tc.onePacket || v.Persistence.Timeout != time.Minute {
			t.Errorf("%v %s: %+v", tc.proto, tc.addr, v)
		}
		full := s
		full.SessionAffinity = &SessionAffinity{IPv4PrefixLen: 32, IPv6PrefixLen: 128}
		if v := virtualService(&full, tc.proto, a(tc.addr), 53); v.Persistence.PrefixLen != tc.fullPrefix {
			t.Errorf("%v %s, whole-address prefix: %d, want 0", tc.proto, tc.addr, v.Persistence.PrefixLen)
		}
	}
}

// A knob's change is one UpdateService per virtual server it changes and
// nothing else; the plan renders it as ipvsadm -E with -M and -o;
// Reconcile repairs a knob changed behind the Proxier's back.
func TestKnobsPlannedAndRepaired(t *testing.T) {
	ctx := context.Background()
	n := newFakeNode(t)
	st := State{Services: map[string]Service{"dns": knobsService()}, Node: dualStackNode}
	if _, err := n.p.Sync(ctx, &st); err != nil {
		t.Fatal(err)
	}
	svc := knobsService()
	svc.SessionAffinity.IPv4PrefixLen = 16
	res, err := n.p.Update(ctx, map[string]*Service{"dns": &svc})
	if err != nil {
		t.Fatal(err)
	}
	got := kinds(&res.Plan.IPVSAdd)
	want := []string{"update service tcp 198.18.100.1:53", "update service udp 198.18.100.1:53"}
	if !slices.Equal(got, want) || res.Plan.IPVSDelete.Len() != 0 || len(res.Plan.Bind)+len(res.Plan.Unbind) != 0 || len(res.Plan.SetChanges) != 0 {
		t.Errorf("plan of a prefix change: %q, want %q; plan %+v", got, want, res.Plan)
	}
	text, err := res.Plan.render(DefaultLinkName)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"-E -t 198.18.100.1:53 -s rr -p 60 -M 255.255.0.0\n",
		"-E -u 198.18.100.1:53 -s rr -p 60 -M 255.255.0.0 -o\n",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("plan text lacks %q:\n%s", line, text)
		}
	}
	// Behind the Proxier's back: another netmask, and one-packet off.
	k := ipvs.Service{Protocol: UDP, Addr: a("2001:db8:100::1"), Port: 53}.Key()
	svcs, err := n.ipvs.Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, si := range svcs {
		if si.Service.Key() == k {
			changed := si.Service
			changed.Persistence.PrefixLen, changed.OnePacket = 48, false
			if err := n.ipvs.UpdateService(ctx, changed); err != nil {
				t.Fatal(err)
			}
		}
	}
	rep, err := n.p.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Drift) != 1 || rep.Drift[0].Problem != "one-packet false, want true; persistence prefix 48, want 64" {
		t.Fatalf("drift:\n%v", rep)
	}
	if rep, err := n.p.Reconcile(ctx); err != nil || len(rep.Drift) != 0 {
		t.Errorf("after the repair: %v, drift:\n%v", err, rep)
	}
}
