package ipvs

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/ipvskit/ipvskit/inet"
)

// ForwardMethod is how IPVS sends packets to a destination
// (IP_VS_CONN_F_FWD_MASK bits, include/uapi/linux/ip_vs.h lines 76-81).
type ForwardMethod uint32

// Forwarding methods. The zero value is Masq, as in the kernel. ipvsadm's
// tables call LocalNode "Local" and DirectRoute "Route".
const (
	Masq        ForwardMethod = 0 // NAT (IP_VS_CONN_F_MASQ, ipvsadm -m)
	LocalNode   ForwardMethod = 1 // local node (IP_VS_CONN_F_LOCALNODE)
	Tunnel      ForwardMethod = 2 // IP-in-IP, GUE or GRE tunnel (IP_VS_CONN_F_TUNNEL, ipvsadm -i)
	DirectRoute ForwardMethod = 3 // direct routing (IP_VS_CONN_F_DROUTE, ipvsadm -g)
	Bypass      ForwardMethod = 4 // cache bypass (IP_VS_CONN_F_BYPASS)

	fwdMask = 0x0007
)

func (m ForwardMethod) String() string {
	switch m {
	case Masq:
		return "masq"
	case LocalNode:
		return "local"
	case Tunnel:
		return "tunnel"
	case DirectRoute:
		return "route"
	case Bypass:
		return "bypass"
	}
	return fmt.Sprintf("forward(%d)", uint32(m))
}

// TunnelType is the encapsulation of a Tunnel destination
// (IP_VS_CONN_F_TUNNEL_TYPE_*, include/uapi/linux/ip_vs.h lines 123-125).
type TunnelType uint8

// Tunnel types. The zero value is IPIP, as in the kernel.
const (
	IPIP TunnelType = 0
	GUE  TunnelType = 1
	GRE  TunnelType = 2
)

func (t TunnelType) String() string {
	switch t {
	case IPIP:
		return "ipip"
	case GUE:
		return "gue"
	case GRE:
		return "gre"
	}
	return fmt.Sprintf("tunnel(%d)", uint8(t))
}

// TunnelFlags are a GUE or GRE tunnel's checksum options
// (IP_VS_TUNNEL_ENCAP_FLAG_*, include/uapi/linux/ip_vs.h lines 130-132).
// The zero value means no checksum.
type TunnelFlags uint16

// Tunnel checksum flags.
const (
	TunnelNoCsum  TunnelFlags = 0      // IP_VS_TUNNEL_ENCAP_FLAG_NOCSUM
	TunnelCsum    TunnelFlags = 1 << 0 // IP_VS_TUNNEL_ENCAP_FLAG_CSUM
	TunnelRemCsum TunnelFlags = 1 << 1 // IP_VS_TUNNEL_ENCAP_FLAG_REMCSUM
)

func (f TunnelFlags) String() string {
	if f == 0 {
		return "nocsum"
	}
	var s []string
	if f&TunnelCsum != 0 {
		s = append(s, "csum")
	}
	if f&TunnelRemCsum != 0 {
		s = append(s, "remcsum")
	}
	if rest := f &^ (TunnelCsum | TunnelRemCsum); rest != 0 {
		s = append(s, fmt.Sprintf("%#x", uint16(rest)))
	}
	return strings.Join(s, ",")
}

// DestinationKey identifies a destination within its service. It is
// comparable, for map keys.
type DestinationKey struct {
	Addr netip.Addr
	Port uint16
}

func (k DestinationKey) String() string { return netip.AddrPortFrom(k.Addr, k.Port).String() }

// Destination is a real server of a service: its identity (Addr, Port) and
// its configuration. It is comparable.
type Destination struct {
	Addr netip.Addr
	Port uint16 // for firewall-mark services 0 keeps each packet's port
	// Family is the address family of Addr; zero means Addr's. It is always
	// sent to the kernel, and values read back always have it set (from the
	// service when an old kernel omits it).
	Family Family

	Forward ForwardMethod
	// Weight is the relative share of new connections; 0 sends none (the
	// destination is quiesced). At most 2^31-1.
	Weight uint32
	// UpperThreshold: above this many active+inactive connections the
	// destination gets no new ones; 0 means no limit.
	UpperThreshold uint32
	// LowerThreshold: an overloaded destination gets new connections again
	// below this many; 0 means the kernel's default (3/4 of the upper).
	LowerThreshold uint32

	// TunnelType, TunnelPort and TunnelFlags configure a Tunnel
	// destination: IPIP (no port), GUE (port required) or GRE.
	TunnelType  TunnelType
	TunnelPort  uint16
	TunnelFlags TunnelFlags
}

// Key returns d's identity within its service.
func (d Destination) Key() DestinationKey { return DestinationKey{Addr: d.Addr, Port: d.Port} }

func (d Destination) String() string { return d.Key().String() }

// family is Family, or else Addr's family.
func (d Destination) family() Family {
	if d.Family != 0 {
		return d.Family
	}
	return inet.FamilyOf(d.Addr)
}

// DestinationInfo is a destination as the kernel reports it: its
// configuration, connection counts and counters.
type DestinationInfo struct {
	Destination
	ActiveConns     uint32 // established connections
	InactiveConns   uint32 // connections in other states
	PersistentConns uint32 // persistence templates pointing here
	Stats           Stats
}
