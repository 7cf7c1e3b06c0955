package iptables

import (
	"net/netip"
	"os"
	"os/exec"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// fuzzReader hands out the fuzz input a few bytes at a time (zeros once
// it runs out).
type fuzzReader []byte

func (r *fuzzReader) next(n int) []byte {
	out := make([]byte, n)
	k := copy(out, *r)
	*r = (*r)[k:]
	return out
}

func (r *fuzzReader) byte() byte { return r.next(1)[0] }

func (r *fuzzReader) addr(f Family) netip.Addr {
	if f == IPv6 {
		return netip.AddrFrom16([16]byte(r.next(16)))
	}
	return netip.AddrFrom4([4]byte(r.next(4)))
}

// fuzzRuleset builds a Ruleset from fuzz input: family and options, then
// members of any set (an out-of-range set number too), any values.
func fuzzRuleset(data []byte) *Ruleset {
	r := fuzzReader(data)
	flags := r.byte()
	f := IPv4
	if flags&1 != 0 {
		f = IPv6
	}
	o := Options{
		MasqueradeAll:           flags&2 != 0,
		NoVIPAccessFilter:       flags&4 != 0,
		NoNodeSourceRangeFilter: flags&8 != 0,
	}
	if flags&16 != 0 {
		m := r.next(4)
		o.MasqueradeMark = uint32(m[0])<<24 | uint32(m[1])<<16 | uint32(m[2])<<8 | uint32(m[3])
	}
	o.LocalDetector.Mode = LocalMode(flags >> 5 & 3)
	switch o.LocalDetector.Mode {
	case LocalCIDR:
		o.LocalDetector.CIDR = netip.PrefixFrom(r.addr(f), int(r.byte()))
	case LocalInterface, LocalInterfacePrefix:
		o.LocalDetector.Interface = string(r.next(int(r.byte() % 18)))
	}
	rs := NewRuleset(f, o)
	for len(r) > 0 {
		s := SetName(r.byte() % byte(numSets+2))
		a := r.addr(f)
		p := Protocol(r.byte())
		pb := r.next(2)
		port := uint16(pb[0])<<8 | uint16(pb[1])
		switch s.Shape() {
		case ShapeAddr:
			rs.Add(s, Addr(a))
		case ShapePort:
			rs.Add(s, Port(port))
		case ShapeAddrPortAddr:
			rs.Add(s, AddrPortAddr(a, p, port, r.addr(f)))
		case ShapeAddrPortNet:
			rs.Add(s, AddrPortNet(a, p, port, netip.PrefixFrom(r.addr(f), int(r.byte()))))
		default:
			rs.Add(s, AddrPort(a, p, port))
		}
	}
	return rs
}

// A Ruleset built from any input either fails Validate or renders a script
// that nft accepts (checked with nft -c in a fresh namespace when root and
// nft are there; rendered only otherwise).
func FuzzRenderNFT(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{1})
	f.Add([]byte{0x20, 198, 19, 0, 0, 16, 1, 198, 18, 0, 1, 6, 0, 80, 9, 198, 18, 0, 5, 6, 0, 80, 198, 19, 1, 0, 24})
	f.Add([]byte{0x42, 4, 'c', 'n', 'i', '0', 10, 0, 0, 0, 0, 6, 0x75, 0x30, 17, 198, 18, 0, 6})
	f.Add([]byte{0x13, 0, 1, 0, 0, 1, 0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 17, 0, 53})
	var ns *testutil.NetNS
	if _, err := exec.LookPath("nft"); err == nil && os.Geteuid() == 0 {
		ns = testutil.NewNetNS(f)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzRuleset(data)
		if r.Validate() != nil {
			return
		}
		script, err := RenderNFT(r, "")
		if err != nil {
			t.Fatalf("a valid ruleset did not render: %v", err)
		}
		if ns == nil {
			return
		}
		if out, err := ns.TryExec(t, []byte(script), "nft", "-c", "-f", "-"); err != nil {
			t.Fatalf("nft -c refused the script of a valid ruleset: %v %s\n%s", err, out, script)
		}
	})
}
