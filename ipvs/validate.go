package ipvs

import (
	"math"
	"net/netip"
	"strings"
	"time"

	"github.com/ipvskit/ipvskit/inet"
)

// Name limits (include/uapi/linux/ip_vs.h lines 115-117: the buffers hold a
// terminating NUL).
const (
	schedNameMax = 16 - 1 // IP_VS_SCHEDNAME_MAXLEN
	peNameMax    = 16 - 1 // IP_VS_PENAME_MAXLEN
	ifNameMax    = 16 - 1 // IP_VS_IFNAME_MAXLEN
)

func validateAddr(field string, a netip.Addr) error {
	switch {
	case !a.IsValid():
		return invalid(field, a, "want an IPv4 or IPv6 address")
	case a.Zone() != "":
		return invalid(field, a, "zones are not supported")
	case a.Is4In6():
		return invalid(field, a, "IPv4-mapped IPv6 address: use the IPv4 form")
	}
	return nil
}

func validateFamily(field string, f Family) error {
	if f != IPv4 && f != IPv6 {
		return invalid(field, f, "want IPv4 or IPv6")
	}
	return nil
}

// validateKey checks a service identity.
func validateKey(k ServiceKey) error {
	if k.FWMark != 0 {
		if k.Protocol != 0 {
			return invalid("Service.Protocol", k.Protocol, "must be 0 for a firewall-mark service")
		}
		if k.Addr.IsValid() {
			return invalid("Service.Addr", k.Addr, "must be unset for a firewall-mark service")
		}
		if k.Port != 0 {
			return invalid("Service.Port", k.Port, "must be 0 for a firewall-mark service")
		}
		return validateFamily("Service.Family", k.Family)
	}
	switch k.Protocol {
	case TCP, UDP, SCTP:
	default:
		return invalid("Service.Protocol", k.Protocol, "want TCP, UDP or SCTP (or set FWMark)")
	}
	if err := validateAddr("Service.Addr", k.Addr); err != nil {
		return err
	}
	if k.Family != 0 && k.Family != inet.FamilyOf(k.Addr) {
		return invalid("Service.Family", k.Family, "does not match Addr %v", k.Addr)
	}
	return nil
}

func validateName(field, name string, maxLen int, required bool) error {
	switch {
	case name == "" && required:
		return invalid(field, `""`, "required")
	case len(name) > maxLen:
		return invalid(field, name, "longer than %d bytes", maxLen)
	case strings.IndexByte(name, 0) >= 0:
		return invalid(field, name, "contains a NUL byte")
	}
	return nil
}

// validateModuleName checks a scheduler or persistence engine name: the
// kernel loads its module as ip_vs_NAME (ip_vs_pe_NAME), so it is made of
// the characters of module names.
func validateModuleName(field, name string, maxLen int, required bool) error {
	if err := validateName(field, name, maxLen, required); err != nil {
		return err
	}
	for _, r := range name {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-') {
			return invalid(field, name, "%q is not allowed in a module name (want letters, digits, _ and -)", r)
		}
	}
	return nil
}

// validateService checks a service to add or update.
func validateService(s Service) error {
	k := s.Key()
	if err := validateKey(k); err != nil {
		return err
	}
	if err := validateModuleName("Service.Scheduler", s.Scheduler, schedNameMax, true); err != nil {
		return err
	}
	if err := validateModuleName("Service.PersistenceEngine", s.PersistenceEngine, peNameMax, false); err != nil {
		return err
	}
	if s.SchedFlags&^allSchedFlags != 0 {
		return invalid("Service.SchedFlags", s.SchedFlags, "only SchedFlag1..3 exist")
	}
	p := s.Persistence
	switch {
	case k.FWMark == 0 && k.Port == 0 && p.Timeout == 0:
		// ipvsadm refuses it too: port 0 matches every port, which only
		// a persistent service may do.
		return invalid("Service.Port", k.Port, "0 (every port) needs persistence (Persistence.Timeout)")
	case p.Timeout < 0 || p.Timeout%time.Second != 0 || p.Timeout/time.Second > math.MaxUint32:
		return invalid("Service.Persistence.Timeout", p.Timeout, "want whole seconds from 0 to 2^32-1")
	case p.Timeout == 0 && p.PrefixLen != 0:
		return invalid("Service.Persistence.PrefixLen", p.PrefixLen, "set on a service that is not persistent (Timeout 0)")
	case int(p.PrefixLen) > k.Family.Bits():
		return invalid("Service.Persistence.PrefixLen", p.PrefixLen, "longer than a %v address", k.Family)
	}
	return nil
}

// validateDestKey checks a destination identity within service k.
func validateDestKey(k ServiceKey, d DestinationKey) error {
	if err := validateKey(k); err != nil {
		return err
	}
	return validateAddr("Destination.Addr", d.Addr)
}

// validateDest checks a destination to add to or update in service k.
func validateDest(k ServiceKey, d Destination) error {
	if err := validateDestKey(k, d.Key()); err != nil {
		return err
	}
	k = k.normal()
	if d.Family != 0 && d.Family != inet.FamilyOf(d.Addr) {
		return invalid("Destination.Family", d.Family, "does not match Addr %v", d.Addr)
	}
	if d.Forward > Bypass {
		return invalid("Destination.Forward", d.Forward, "want Masq, LocalNode, Tunnel, DirectRoute or Bypass")
	}
	if d.family() != k.Family && d.Forward != Tunnel {
		return invalid("Destination.Addr", d.Addr, "a %v destination of a %v service needs Forward Tunnel", d.family(), k.Family)
	}
	if d.Weight > math.MaxInt32 {
		return invalid("Destination.Weight", d.Weight, "at most 2^31-1")
	}
	if d.LowerThreshold > d.UpperThreshold {
		return invalid("Destination.LowerThreshold", d.LowerThreshold, "above UpperThreshold %d", d.UpperThreshold)
	}
	if d.Forward != Tunnel {
		if d.TunnelType != IPIP || d.TunnelPort != 0 || d.TunnelFlags != 0 {
			return invalid("Destination.TunnelType", d.TunnelType, "tunnel settings need Forward Tunnel, not %v", d.Forward)
		}
		return nil
	}
	switch d.TunnelType {
	case IPIP:
		if d.TunnelPort != 0 || d.TunnelFlags != 0 {
			return invalid("Destination.TunnelPort", d.TunnelPort, "ipip tunnels take no port or checksum flags")
		}
	case GUE:
		if d.TunnelPort == 0 {
			return invalid("Destination.TunnelPort", d.TunnelPort, "a gue tunnel needs a port")
		}
	case GRE:
		if d.TunnelPort != 0 {
			return invalid("Destination.TunnelPort", d.TunnelPort, "gre tunnels take no port")
		}
	default:
		return invalid("Destination.TunnelType", d.TunnelType, "want IPIP, GUE or GRE")
	}
	if d.TunnelFlags&^(TunnelCsum|TunnelRemCsum) != 0 || d.TunnelFlags == TunnelCsum|TunnelRemCsum {
		return invalid("Destination.TunnelFlags", d.TunnelFlags, "want one of TunnelNoCsum, TunnelCsum, TunnelRemCsum")
	}
	if d.TunnelFlags == TunnelRemCsum && d.TunnelType != GUE {
		// ipvsadm refuses it too: remote checksum offload is a GUE option.
		return invalid("Destination.TunnelFlags", d.TunnelFlags, "remcsum needs a gue tunnel")
	}
	return nil
}

// validateDaemon checks a sync daemon to start.
func validateDaemon(d Daemon) error {
	if d.State != Master && d.State != Backup {
		return invalid("Daemon.State", d.State, "want Master or Backup")
	}
	if err := validateName("Daemon.Interface", d.Interface, ifNameMax, true); err != nil {
		return err
	}
	if d.Group.IsValid() {
		if err := validateAddr("Daemon.Group", d.Group); err != nil {
			return err
		}
		if !d.Group.IsMulticast() {
			return invalid("Daemon.Group", d.Group, "not a multicast address")
		}
	}
	return nil
}

// validateTimeouts checks timeouts to set.
func validateTimeouts(t Timeouts) error {
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"Timeouts.TCP", t.TCP}, {"Timeouts.TCPFin", t.TCPFin}, {"Timeouts.UDP", t.UDP}} {
		if f.v < 0 || f.v%time.Second != 0 || f.v/time.Second > math.MaxInt32 {
			return invalid(f.name, f.v, "want whole seconds from 0 to 2^31-1")
		}
	}
	return nil
}
