package dummy

import (
	"encoding/binary"
	"net/netip"

	"github.com/ipvskit/ipvskit/internal/nlattr"
)

// addrMessage is the body of an RTM_NEWADDR or RTM_DELADDR request for p on
// link index: struct ifaddrmsg (scope universe), then IFA_LOCAL and
// IFA_ADDRESS, both p's address. IPv6 addresses skip duplicate address
// detection (IFA_F_NODAD): a VIP is meant to be shared, and a tentative
// address could not be used.
func addrMessage(index int, p netip.Prefix) []byte {
	a := p.Addr()
	fam, flag := byte(afInet), byte(0)
	if a.Is6() {
		fam, flag = afInet6, ifaFNoDAD
	}
	b := make([]byte, ifaddrmsgLen, ifaddrmsgLen+2*(4+16))
	b[0], b[1], b[2] = fam, byte(p.Bits()), flag
	binary.NativeEndian.PutUint32(b[4:8], uint32(index))
	e := nlattr.NewEncoder(b)
	e.Addr(ifaLocal, a)
	e.Addr(ifaAddress, a)
	return e.Bytes()
}

// addrDumpRequest is the body of an RTM_GETADDR dump of every family's
// addresses (the kernel sends those of every link).
func addrDumpRequest() []byte { return make([]byte, ifaddrmsgLen) }

// parseAddr decodes the body of an RTM_NEWADDR message: the link's index
// and the address with its prefix length (IFA_LOCAL, which is the
// address itself on a point-to-point link, else IFA_ADDRESS). index is set
// whenever the fixed head is there; ok is false for a message too short or
// malformed, a family other than IPv4 and IPv6, or no address.
func parseAddr(b []byte) (index int, p netip.Prefix, ok bool) {
	if len(b) < ifaddrmsgLen {
		return 0, netip.Prefix{}, false
	}
	fam, bits := b[0], int(b[1])
	index = int(binary.NativeEndian.Uint32(b[4:8]))
	if fam != afInet && fam != afInet6 {
		return index, netip.Prefix{}, false
	}
	var local, address []byte
	d := nlattr.NewDecoder(b[ifaddrmsgLen:])
	for d.Next() {
		switch d.Type() {
		case ifaLocal:
			local = d.Bytes()
		case ifaAddress:
			address = d.Bytes()
		}
	}
	raw := local
	if raw == nil {
		raw = address
	}
	a, aok := netip.AddrFromSlice(raw)
	if d.Err() != nil || !aok || (fam == afInet) != a.Is4() || bits > a.BitLen() {
		return index, netip.Prefix{}, false
	}
	return index, netip.PrefixFrom(a, bits), true
}
