package iptables

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func mustAddr(s string) netip.Addr     { return netip.MustParseAddr(s) }
func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func TestValidateNamesFieldAndValue(t *testing.T) {
	v4 := mustAddr("198.18.0.1")
	v6 := mustAddr("2001:db8::1")
	for _, tc := range []struct {
		name         string
		fam          Family
		o            Options
		set          SetName
		m            Member
		field, value string
	}{
		{"mark two bits", IPv4, Options{MasqueradeMark: 0x6000}, 0, Member{}, "Options.MasqueradeMark", "0x6000"},
		{"cidr host bits", IPv4, Options{LocalMatch: LocalMatch{Mode: LocalCIDR, CIDR: mustPrefix("198.18.0.1/16")}}, 0, Member{}, "Options.LocalMatch.CIDR", "198.18.0.1/16"},
		{"cidr wrong family", IPv6, Options{LocalMatch: LocalMatch{Mode: LocalCIDR, CIDR: mustPrefix("198.18.0.0/16")}}, 0, Member{}, "Options.LocalMatch.CIDR", "198.18.0.0/16"},
		{"iface too long", IPv4, Options{LocalMatch: LocalMatch{Mode: LocalInterface, Interface: "a-very-long-name0"}}, 0, Member{}, "Options.LocalMatch.Interface", "a-very-long-name0"},
		{"iface wildcard", IPv4, Options{LocalMatch: LocalMatch{Mode: LocalInterfacePrefix, Interface: "veth+"}}, 0, Member{}, "Options.LocalMatch.Interface", "veth+"},
		{"iface in cidr mode", IPv4, Options{LocalMatch: LocalMatch{Mode: LocalCIDR, Interface: "x"}}, 0, Member{}, "Options.LocalMatch.Interface", "x"},
		{"unknown mode", IPv4, Options{LocalMatch: LocalMatch{Mode: 9}}, 0, Member{}, "Options.LocalMatch.Mode", "LocalMode(9)"},
		{"port zero", IPv4, Options{}, ClusterIPSet, AddrPort(v4, TCP, 0), "cluster-ip[198.18.0.1,tcp:0].Port", "0"},
		{"bad proto", IPv4, Options{}, ClusterIPSet, AddrPort(v4, 1, 80), "cluster-ip[198.18.0.1,icmp:80].Proto", "icmp"},
		{"v6 addr in v4", IPv4, Options{}, ClusterIPSet, AddrPort(v6, TCP, 80), "cluster-ip[2001:db8::1,tcp:80].Addr", "2001:db8::1"},
		{"mapped addr", IPv6, Options{}, IPVSIPs, Addr(mustAddr("::ffff:198.18.0.1")), "ipvs-ips[::ffff:198.18.0.1].Addr", "::ffff:198.18.0.1"},
		{"port in addr set", IPv4, Options{}, IPVSIPs, AddrPort(v4, TCP, 80), "ipvs-ips[198.18.0.1,tcp:80].Port", "tcp:80"},
		{"addr in port set", IPv4, Options{}, NodePortTCP, Member{Addr: v4, Port: 30000}, "node-port-tcp[198.18.0.1].Addr", "198.18.0.1"},
		{"proto in port set", IPv4, Options{}, NodePortTCP, Member{Proto: TCP, Port: 30000}, "node-port-tcp[tcp:30000].Proto", "tcp"},
		{"sctp set tcp", IPv4, Options{}, NodePortSCTP, AddrPort(v4, TCP, 30000), "node-port-sctp[198.18.0.1,tcp:30000].Proto", "tcp"},
		{"missing addr2", IPv4, Options{}, LoopBack, AddrPort(v4, TCP, 80), "loop-back[198.18.0.1,tcp:80].Addr2", ""},
		{"net host bits", IPv4, Options{}, LoadBalancerSourceCIDR, AddrPortNet(v4, TCP, 80, mustPrefix("198.19.0.1/24")), "load-balancer-source-cidr[198.18.0.1,tcp:80,198.19.0.1/24].Net", "198.19.0.1/24"},
		{"net in plain set", IPv4, Options{}, ClusterIPSet, AddrPortNet(v4, TCP, 80, mustPrefix("198.19.0.0/24")), "cluster-ip[198.18.0.1,tcp:80,198.19.0.0/24].Net", "198.19.0.0/24"},
		{"bad family", 5, Options{}, 0, Member{}, "Family", "Family(5)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRuleset(tc.fam, tc.o)
			if tc.set != 0 {
				r.Add(tc.set, tc.m)
			}
			err := r.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want a *ValidationError, got %v", err)
			}
			if ve.Field != tc.field || ve.Value != tc.value {
				t.Fatalf("got field %q value %q (%v), want %q %q", ve.Field, ve.Value, err, tc.field, tc.value)
			}
			if _, err := RenderIPTables(r, nil); !errors.As(err, &ve) {
				t.Fatalf("RenderIPTables accepted an invalid ruleset: %v", err)
			}
			if _, err := RenderNFT(r, ""); !errors.As(err, &ve) {
				t.Fatalf("RenderNFT accepted an invalid ruleset: %v", err)
			}
		})
	}
}

func TestValidateAcceptsSamples(t *testing.T) {
	for _, f := range []Family{IPv4, IPv6} {
		for name, o := range optionCases(f) {
			if err := sample(f, o).Validate(); err != nil {
				t.Errorf("%v %s: %v", f, name, err)
			}
		}
	}
	var zero Ruleset
	if err := zero.Validate(); err != nil {
		t.Errorf("the zero Ruleset must be valid: %v", err)
	}
}

func TestAddToUnknownSetIsAValidationError(t *testing.T) {
	r := NewRuleset(IPv4, Options{})
	r.Add(SetName(99), Port(1))
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "SetName") {
		t.Fatalf("want an error naming SetName, got %v", err)
	}
}

func TestIPSetNames(t *testing.T) {
	for s, want := range map[SetName][2]string{
		ClusterIPSet:           {"KUBE-CLUSTER-IP", "KUBE-6-CLUSTER-IP"},
		LoadBalancerSourceCIDR: {"KUBE-LOAD-BALANCER-SOURCE-CIDR", "KUBE-6-LOAD-BALANCER-SOURCE-CID"},
		NodePortLocalSCTP:      {"KUBE-NODE-PORT-LOCAL-SCTP-HASH", "KUBE-6-NODE-PORT-LOCAL-SCTP-HAS"},
		LBNoNodeAccess:         {"", ""},
	} {
		if got := [2]string{s.IPSetName(IPv4), s.IPSetName(IPv6)}; got != want {
			t.Errorf("%v: got %q, want %q", s, got, want)
		}
	}
	seen := map[string]bool{}
	for _, s := range Sets() {
		for _, f := range []Family{IPv4, IPv6} {
			n := s.IPSetName(f)
			if n != "" && (seen[n] || len(n) > 31) {
				t.Errorf("ipset name %q repeated or too long", n)
			}
			seen[n] = true
		}
	}
}

func TestCloneEqualDelta(t *testing.T) {
	r := sample(IPv4, Options{})
	c := r.Clone()
	if !c.Equal(r) {
		t.Fatal("a clone must equal its original")
	}
	m := AddrPort(mustAddr("198.18.9.9"), TCP, 80)
	c.Add(ClusterIPSet, m)
	c.Remove(ClusterIPSet, AddrPort(mustAddr("198.18.0.1"), TCP, 80))
	if c.Equal(r) || r.Has(ClusterIPSet, m) {
		t.Fatal("changing a clone changed the original, or Equal missed the change")
	}
	add, del := c.delta(r, ClusterIPSet)
	if len(add) != 1 || add[0] != m || len(del) != 1 || del[0].Port != 80 || del[0].Addr != mustAddr("198.18.0.1") {
		t.Fatalf("delta: add %v del %v", add, del)
	}
	c.Options.MasqueradeAll = true
	c2 := c.Clone()
	c2.Options.MasqueradeAll = false
	if c.Equal(c2) {
		t.Fatal("Equal ignores the options")
	}
}

func TestMemberString(t *testing.T) {
	a := mustAddr("198.18.0.1")
	for m, want := range map[Member]string{
		Addr(a):                    "198.18.0.1",
		AddrPort(a, UDP, 53):       "198.18.0.1,udp:53",
		AddrPortAddr(a, TCP, 1, a): "198.18.0.1,tcp:1,198.18.0.1",
		AddrPortNet(a, SCTP, 2, mustPrefix("198.19.0.0/16")): "198.18.0.1,sctp:2,198.19.0.0/16",
		Port(30000): "30000",
	} {
		if got := m.String(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// The journal finds the same changes as a full comparison, after any
// sequence of adds, removes and clears.
func TestJournalDeltasEqualFullDiff(t *testing.T) {
	r := sample(IPv4, Options{})
	old := r.Clone()
	m := r.mark()
	a := mustAddr("198.18.30.1")
	r.Add(ClusterIPSet, AddrPort(a, TCP, 1), AddrPort(a, TCP, 2))
	r.Remove(ClusterIPSet, AddrPort(a, TCP, 2))  // added then removed: no change
	r.Remove(NodePortTCP, Port(30080))           // removed
	r.Add(NodePortTCP, Port(30080))              // and back: no change
	r.Clear(LoopBack)                            // all removed
	r.Add(IPVSIPs, Addr(mustAddr("198.18.0.1"))) // already there: no change
	r.Add(LoadBalancerSourceCIDR, AddrPortNet(a, UDP, 3, mustPrefix("198.19.9.0/24")))
	got := r.deltas(old, m)
	want := r.deltas(old, journalMark{})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("journal deltas %v, full diff %v", got, want)
	}
	if len(got[ClusterIPSet].Add) != 1 || len(got[LoopBack].Del) != 1 || len(got[NodePortTCP].Add)+len(got[NodePortTCP].Del) != 0 {
		t.Fatalf("unexpected deltas: %v", got)
	}
}

// Contains sees every member of every set, whatever the sizes, and Grow
// keeps what a set holds.
func TestContainsAndGrow(t *testing.T) {
	a, b := mustAddr("198.18.0.1"), mustAddr("198.18.0.2")
	r, o := NewRuleset(IPv4, Options{}), NewRuleset(IPv4, Options{})
	r.Add(ClusterIPSet, AddrPort(a, TCP, 80))
	r.Grow(ClusterIPSet, 100)
	r.Grow(IPVSIPs, 100)
	if !r.Has(ClusterIPSet, AddrPort(a, TCP, 80)) || r.Len(ClusterIPSet) != 1 || r.Len(IPVSIPs) != 0 {
		t.Fatalf("after Grow: %v", r.Members(ClusterIPSet))
	}
	if !r.Contains(o) || !o.Equal(NewRuleset(IPv4, Options{})) {
		t.Fatal("an empty ruleset is not contained")
	}
	o.Add(ClusterIPSet, AddrPort(b, TCP, 80))
	if r.Contains(o) {
		t.Fatal("a member r lacks is contained")
	}
	r.Add(ClusterIPSet, AddrPort(b, TCP, 80))
	o.Add(IPVSIPs, Addr(a))
	if r.Contains(o) {
		t.Fatal("a member of another set r lacks is contained")
	}
	r.Add(IPVSIPs, Addr(a))
	if !r.Contains(o) || o.Contains(r) {
		t.Fatal("Contains is not the subset relation")
	}
}
