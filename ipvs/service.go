package ipvs

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/ipvskit/ipvskit/inet"
)

// Family is a service's or destination's address family (inet.Family: the
// kernel's AF_INET or AF_INET6, sent on the wire as a u16).
type Family = inet.Family

// Address families.
const (
	IPv4 = inet.IPv4
	IPv6 = inet.IPv6
)

// Protocol is a service's transport protocol (inet.Protocol: the IANA
// number, sent on the wire as a u16). The zero value is a fwmark service's.
type Protocol = inet.Protocol

// Protocols IPVS balances.
const (
	TCP  = inet.TCP
	UDP  = inet.UDP
	SCTP = inet.SCTP
)

// SchedFlags are the scheduler-specific service flags (IP_VS_SVC_F_SCHED1..3).
// Their meaning depends on the scheduler: sh and mh give flags 1 and 2 names.
type SchedFlags uint32

// Scheduler flags (include/uapi/linux/ip_vs.h lines 24-29).
const (
	SchedFlag1 SchedFlags = 0x0008 // IP_VS_SVC_F_SCHED1
	SchedFlag2 SchedFlags = 0x0010 // IP_VS_SVC_F_SCHED2
	SchedFlag3 SchedFlags = 0x0020 // IP_VS_SVC_F_SCHED3

	// SHFallback makes sh pick another destination when the hashed one is
	// unavailable (IP_VS_SVC_F_SCHED_SH_FALLBACK).
	SHFallback = SchedFlag1
	// SHPort makes sh hash the source port too (IP_VS_SVC_F_SCHED_SH_PORT).
	SHPort = SchedFlag2
	// MHFallback makes mh pick another destination when the hashed one is
	// unavailable (same bit as SHFallback; ip_vs_mh.c).
	MHFallback = SchedFlag1
	// MHPort makes mh hash the source port too (same bit as SHPort).
	MHPort = SchedFlag2

	allSchedFlags = SchedFlag1 | SchedFlag2 | SchedFlag3
)

func (f SchedFlags) String() string {
	var s []string
	for i, b := range []SchedFlags{SchedFlag1, SchedFlag2, SchedFlag3} {
		if f&b != 0 {
			s = append(s, fmt.Sprintf("flag-%d", i+1))
		}
	}
	if rest := f &^ allSchedFlags; rest != 0 {
		s = append(s, fmt.Sprintf("%#x", uint32(rest)))
	}
	return strings.Join(s, ",")
}

// Persistence makes a service persistent: for Timeout after its last
// connection, a client (or every client of its network, see PrefixLen) is
// sent to the same destination. The zero value means not persistent. The
// kernel's IP_VS_SVC_F_PERSISTENT flag, timeout and netmask are all derived
// from this one value, so they cannot disagree.
type Persistence struct {
	// Timeout is how long persistence lasts; 0 means the service is not
	// persistent. Whole seconds, at most 2^32-1 s.
	Timeout time.Duration

	// PrefixLen groups clients by network for persistence: clients whose
	// addresses share their first PrefixLen bits go to one destination.
	// 0 means the full address length (32 or 128: each client on its own);
	// the full length itself means the same, and values read back from the
	// kernel always say 0 for it. On the wire it is a netmask for IPv4
	// services and a prefix length for IPv6 ones; this one field covers
	// both.
	PrefixLen uint8
}

// ServiceKey identifies a service: a protocol, address and port, or a
// firewall mark and a family. It is comparable, for map keys.
type ServiceKey struct {
	// Family is the address family; the family of Addr for address
	// services, and required for firewall-mark services.
	Family   Family
	Protocol Protocol   // TCP, UDP or SCTP; 0 for firewall-mark services
	Addr     netip.Addr // the virtual address; zero for firewall-mark services
	Port     uint16     // 0 with persistence means every port
	FWMark   uint32     // non-zero for firewall-mark services
}

func (k ServiceKey) String() string {
	if k.FWMark != 0 {
		return fmt.Sprintf("fwmark %d (%v)", k.FWMark, k.family())
	}
	return fmt.Sprintf("%v %v", k.Protocol, netip.AddrPortFrom(k.Addr, k.Port))
}

// family is Family, or else Addr's family.
func (k ServiceKey) family() Family {
	if k.Family != 0 || k.FWMark != 0 {
		return k.Family
	}
	return inet.FamilyOf(k.Addr)
}

// normal returns k with Family filled in.
func (k ServiceKey) normal() ServiceKey {
	k.Family = k.family()
	return k
}

// Service is a virtual service: its identity (the ServiceKey fields) and its
// configuration. It is comparable. Values read from the kernel always have
// Family set; values built by hand may leave it zero for address services.
type Service struct {
	Family   Family     // see ServiceKey.Family
	Protocol Protocol   // TCP, UDP or SCTP; 0 for firewall-mark services
	Addr     netip.Addr // virtual address; zero for firewall-mark services
	Port     uint16     // virtual port
	FWMark   uint32     // firewall mark; non-zero makes this a firewall-mark service

	// Scheduler is the scheduler's name: rr, wrr, lc, wlc, lblc, lblcr,
	// dh, sh, sed, nq, fo, ovf, mh, twos. Required (ipvsadm's default is wlc).
	Scheduler string
	// SchedFlags are scheduler-specific flags (SHFallback, MHPort, ...).
	SchedFlags SchedFlags
	// OnePacket schedules each UDP datagram on its own
	// (IP_VS_SVC_F_ONEPACKET, ipvsadm -o).
	OnePacket bool
	// Persistence makes the service persistent; the zero value means not.
	Persistence Persistence
	// PersistenceEngine names a persistence engine (only "sip" exists);
	// "" means none.
	PersistenceEngine string
}

// Key returns s's identity, with Family filled in.
func (s Service) Key() ServiceKey {
	return ServiceKey{Family: s.Family, Protocol: s.Protocol, Addr: s.Addr, Port: s.Port, FWMark: s.FWMark}.normal()
}

func (s Service) String() string { return s.Key().String() }

// ServiceInfo is a service as the kernel reports it: its configuration and
// its counters.
type ServiceInfo struct {
	Service
	// Stats are the service's counters and rates (64-bit when the kernel
	// sends them, else widened from the 32-bit ones).
	Stats Stats
}
