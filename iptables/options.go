package iptables

import (
	"fmt"
	"net/netip"
)

// DefaultMasqueradeMark is the mark bit that flags a packet for masquerade
// when Options.MasqueradeMark is zero (kube-proxy's bit 14).
const DefaultMasqueradeMark uint32 = 0x4000

// LocalMode says how the local-traffic detector tells traffic from pods on
// this node apart from other traffic.
type LocalMode uint8

// The detector modes.
const (
	// LocalNone: no detector. Only traffic whose source is itself a
	// service VIP is masqueraded on its way to a cluster IP.
	LocalNone LocalMode = iota
	// LocalCIDR: traffic from outside LocalMatch.CIDR is masqueraded.
	LocalCIDR
	// LocalInterface: traffic not arriving on LocalMatch.Interface is
	// masqueraded.
	LocalInterface
	// LocalInterfacePrefix: traffic arriving on no interface whose name
	// starts with LocalMatch.Interface is masqueraded.
	LocalInterfacePrefix
)

// String names the mode.
func (m LocalMode) String() string {
	switch m {
	case LocalNone:
		return "none"
	case LocalCIDR:
		return "cidr"
	case LocalInterface:
		return "interface"
	case LocalInterfacePrefix:
		return "interface-prefix"
	}
	return fmt.Sprintf("LocalMode(%d)", uint8(m))
}

// LocalMatch selects local (pod) traffic for the cluster-IP masquerade
// rule. The zero value is LocalNone.
type LocalMatch struct {
	Mode LocalMode
	// CIDR is the pod network, for LocalCIDR; it must have no host bits.
	CIDR netip.Prefix
	// Interface is the bridge name (LocalInterface) or the name prefix
	// (LocalInterfacePrefix), 1 to 15 bytes.
	Interface string
}

// Options are the switches that change the rules (not the set contents).
// The zero value is kube-proxy's default behaviour.
type Options struct {
	// MasqueradeAll masquerades all traffic to cluster IPs. It overrides
	// LocalMatch for the cluster-IP rule.
	MasqueradeAll bool
	// LocalMatch selects local traffic (see LocalMode).
	LocalMatch LocalMatch
	// MasqueradeMark is the single mark bit that flags a packet for
	// masquerade; zero means DefaultMasqueradeMark.
	MasqueradeMark uint32
	// NoVIPAccessFilter leaves out the VIP access filter
	// (KUBE-IPVS-FILTER, kubernetes#72236), which makes a VIP answer only
	// on its service ports.
	NoVIPAccessFilter bool
	// NoNodeSourceRangeFilter leaves out the filter that drops
	// node-originated traffic to load balancers whose source ranges do
	// not admit the node (KUBE-IPVS-OUT-FILTER, the LBNoNodeAccess set).
	NoNodeSourceRangeFilter bool
}

// mark returns the masquerade mark in effect.
func (o *Options) mark() uint32 {
	if o.MasqueradeMark == 0 {
		return DefaultMasqueradeMark
	}
	return o.MasqueradeMark
}

func (o *Options) validate(f Family) error {
	if m := o.MasqueradeMark; m != 0 && m&(m-1) != 0 {
		return &ValidationError{Field: "Options.MasqueradeMark", Value: fmt.Sprintf("%#x", m), Reason: "must have exactly one bit set"}
	}
	d := &o.LocalMatch
	switch d.Mode {
	case LocalNone:
		if d.CIDR.IsValid() || d.Interface != "" {
			return &ValidationError{Field: "Options.LocalMatch", Value: fmt.Sprintf("%v %q", d.CIDR, d.Interface), Reason: "mode none takes no CIDR or interface"}
		}
	case LocalCIDR:
		if d.Interface != "" {
			return &ValidationError{Field: "Options.LocalMatch.Interface", Value: d.Interface, Reason: "mode cidr takes no interface"}
		}
		if err := checkPrefix("Options.LocalMatch.CIDR", f, d.CIDR); err != nil {
			return err
		}
	case LocalInterface, LocalInterfacePrefix:
		if d.CIDR.IsValid() {
			return &ValidationError{Field: "Options.LocalMatch.CIDR", Value: d.CIDR.String(), Reason: "interface modes take no CIDR"}
		}
		if err := checkIfName("Options.LocalMatch.Interface", d.Interface); err != nil {
			return err
		}
	default:
		return &ValidationError{Field: "Options.LocalMatch.Mode", Value: d.Mode.String(), Reason: "unknown mode"}
	}
	return nil
}

func checkPrefix(field string, f Family, p netip.Prefix) error {
	switch {
	case !p.IsValid():
		return &ValidationError{Field: field, Value: p.String(), Reason: "missing or invalid"}
	case !holds(f, p.Addr()):
		return &ValidationError{Field: field, Value: p.String(), Reason: "not a plain " + f.String() + " network"}
	case p.Masked() != p:
		return &ValidationError{Field: field, Value: p.String(), Reason: "has host bits set"}
	}
	return nil
}

// checkIfName checks an interface name (or prefix) as the kernel would
// (dev_valid_name) and as iptables and nft can write it.
func checkIfName(field, name string) error {
	if name == "" || len(name) > 15 {
		return &ValidationError{Field: field, Value: name, Reason: "must be 1 to 15 bytes"}
	}
	if name == "." || name == ".." {
		return &ValidationError{Field: field, Value: name, Reason: "not a valid interface name"}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c > '~' || c == '/' || c == ':' || c == '"' || c == '\\' || c == '+' || c == '*' || c == '!' {
			return &ValidationError{Field: field, Value: name, Reason: fmt.Sprintf("byte %q is not allowed in an interface name", c)}
		}
	}
	return nil
}
