package iptables

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netns"
)

// fuzzRuleset builds a Ruleset from fuzz input: family, options and members
// of any set, valid or not.
func fuzzRuleset(data []byte) *Ruleset {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	f := []Family{IPv4, IPv6, 0, 7}[next()%4]
	addr := func() netip.Addr {
		x, y := next(), next()
		if f == IPv6 {
			return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: x, 15: y})
		}
		return netip.AddrFrom4([4]byte{198, 18 + x%2, x, y})
	}
	o := Options{}
	flags := next()
	o.MasqueradeAll = flags&1 != 0
	o.NoVIPAccessFilter = flags&2 != 0
	o.NoNodeSourceRangeFilter = flags&4 != 0
	if flags&8 != 0 {
		o.MasqueradeMark = 1 << (next() % 40)
	}
	o.LocalMatch.Mode = LocalMode(next() % 5)
	switch o.LocalMatch.Mode {
	case LocalCIDR:
		o.LocalMatch.CIDR = netip.PrefixFrom(addr(), int(next()%130)).Masked()
	case LocalInterface, LocalInterfacePrefix:
		n := int(next() % 18)
		var b strings.Builder
		for range n {
			b.WriteByte("abc09-_.+ \"'x"[next()%13])
		}
		o.LocalMatch.Interface = b.String()
	}
	r := NewRuleset(f, o)
	for len(data) > 0 {
		s := SetName(int(next()) % (numSets + 2))
		proto := Protocol(next() % 140)
		port := uint16(next())<<8 | uint16(next())
		var m Member
		switch s.Shape() {
		case ShapeAddr:
			m = Addr(addr())
		case ShapePort:
			m = Port(port)
		case ShapeAddrPortAddr:
			m = AddrPortAddr(addr(), proto, port, addr())
		case ShapeAddrPortNet:
			m = AddrPortNet(addr(), proto, port, netip.PrefixFrom(addr(), int(next()%130)))
		default:
			m = AddrPort(addr(), proto, port)
		}
		r.Add(s, m)
	}
	return r
}

// restoreTester runs iptables-restore --test of each flavor inside one
// throwaway namespace that holds every ipset the rules name; nil when not
// root or the tools are missing (the fuzz target then only renders).
type restoreTester struct {
	ns   netns.NsHandle
	ipvs bool // the kernel has the ipvs match
}

func newRestoreTester(f *testing.F) *restoreTester {
	if os.Geteuid() != 0 {
		return nil
	}
	for _, tool := range []string{"ipset", "iptables-legacy-restore", "iptables-nft-restore", "ip6tables-legacy-restore", "ip6tables-nft-restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil
		}
	}
	t := &restoreTester{}
	var err error
	done := make(chan struct{})
	go func() { // a thread of its own, thrown away: the test's namespace is untouched
		defer close(done)
		runtime.LockOSThread()
		if t.ns, err = netns.New(); err != nil {
			return
		}
		var sets strings.Builder
		for _, fam := range []Family{IPv4, IPv6} {
			for _, s := range Sets() {
				if spec := ipsetSpec(defaultNames, fam, s); s.isIPSet() {
					extra := map[Family]string{IPv4: "family inet", IPv6: "family inet6"}[fam]
					if spec.Family == 0 {
						extra = "range 0-65535"
					}
					fmt.Fprintf(&sets, "create %s %s %s -exist\n", spec.Name, spec.Type, extra)
				}
			}
		}
		cmd := exec.Command("ipset", "restore")
		cmd.Stdin = strings.NewReader(sets.String())
		if out, e := cmd.CombinedOutput(); e != nil {
			err = fmt.Errorf("%v: %s", e, out)
			return
		}
		probe := exec.Command("iptables-legacy-restore", "--noflush")
		probe.Stdin = strings.NewReader("*filter\n:PROBE - [0:0]\n-A PROBE -m ipvs --vaddr 198.18.0.1 -j DROP\nCOMMIT\n")
		t.ipvs = probe.Run() == nil
	}()
	<-done
	if err != nil {
		f.Fatalf("setting up the namespace: %v", err)
	}
	f.Cleanup(func() { t.ns.Close() })
	return t
}

// test runs bin --test on text inside the namespace.
func (t *restoreTester) test(bin, text string) error {
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		if err = netns.Set(t.ns); err != nil {
			return
		}
		cmd := exec.Command(bin, "--test", "--noflush")
		cmd.Stdin = strings.NewReader(text)
		if out, e := cmd.CombinedOutput(); e != nil {
			err = fmt.Errorf("%v: %s", e, out)
		}
	}()
	<-done
	return err
}

// flavors are both iptables flavors, for tests that run each.
var flavors = []Flavor{FlavorLegacy, FlavorNFT}

// A Ruleset built from any input either fails Validate or renders text
// that iptables-restore of both flavors accepts.
func FuzzRenderIPTables(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 0, 0}, // an empty IPv4 ruleset
		{1, 0, 0, 1, 6, 0, 80, 0, 1, 17, 6, 0, 0, 0, 1, 14, 132, 0x75, 0x8a, 2, 0},                      // IPv6: cluster IP, VIP, SCTP node port
		{0, 0, 1, 0, 0, 16, 2, 6, 0x1f, 0x90, 40, 2, 40, 2, 19, 6, 0, 80, 0, 1},                         // CIDR detector, hairpin, ledger
		{0, 9, 14, 2, 4, 0, 1, 2, 3, 10, 6, 0x75, 0x30, 9, 6, 0, 80, 0, 5, 1, 0, 24, 7, 6, 0, 80, 0, 5}, // interface, node port, LB source range
		{1, 6, 0, 3, 6, 0, 0x1b, 0x58, 0, 9},                                                            // bad protocol: Validate refuses
	} {
		f.Add(seed)
	}
	rt := newRestoreTester(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzRuleset(data)
		text, err := RenderIPTables(r, nil)
		if r.Validate() != nil {
			if err == nil {
				t.Fatal("RenderIPTables accepted what Validate refuses")
			}
			return
		}
		if err != nil {
			t.Fatalf("RenderIPTables refused a valid ruleset: %v", err)
		}
		if rt == nil {
			return
		}
		if !rt.ipvs && r.Len(LBNoNodeAccess) > 0 && !r.Options.NoNodeSourceRangeFilter {
			return // the kernel has no ipvs match to test against
		}
		for _, fl := range flavors {
			if err := rt.test(fl.binary(r.family(), "restore"), text); err != nil {
				t.Fatalf("%s --test refused the rendered rules: %v\n%s", fl.binary(r.family(), "restore"), err, text)
			}
		}
	})
}
