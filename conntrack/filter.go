package conntrack

import (
	"net/netip"
	"strconv"

	"github.com/ipvskit/ipvskit/inet"
)

// Filter selects conntrack entries of one protocol by the destination of
// their original direction (a service's frontend, VIP:port) and keeps those
// whose reply source is one of Keep (the frontend's live destinations):
// Delete removes the flows it selects and does not keep. The zero value of
// each optional field matches anything.
type Filter struct {
	// Protocol is required: TCP, UDP or SCTP.
	Protocol Protocol
	// Addr is the original destination address; the zero Addr matches
	// any. It must not be an IPv4-mapped IPv6 address or carry a zone.
	Addr netip.Addr
	// Port is the original destination port; 0 matches any.
	Port uint16
	// Keep are reply sources whose flows are kept: a flow whose reply
	// source address equals one of them, and whose reply source port
	// equals its port (or its port is 0), is not deleted. Empty means
	// delete every flow the other fields select.
	Keep []netip.AddrPort
}

// Family is the address family of the filter's addresses, and false if it
// has none (it then applies to both families).
func (f *Filter) Family() (Family, bool) {
	if f.Addr.IsValid() {
		return inet.FamilyOf(f.Addr), true
	}
	if len(f.Keep) > 0 {
		return inet.FamilyOf(f.Keep[0].Addr()), true
	}
	return 0, false
}

// Matches reports whether Delete, given f, deletes fl: the protocol and
// the family agree, the original destination is f's (where set), and the
// reply source is none of f.Keep. It assumes f is valid (see Validate).
func (f *Filter) Matches(fl Flow) bool {
	if fl.Protocol != f.Protocol {
		return false
	}
	if fam, ok := f.Family(); ok && fl.Family() != fam {
		return false
	}
	dst := fl.Original.Dst
	if f.Addr.IsValid() && dst.Addr() != f.Addr || f.Port != 0 && dst.Port() != f.Port {
		return false
	}
	src := fl.Reply.Src
	for _, k := range f.Keep {
		if src.Addr() == k.Addr() && (k.Port() == 0 || src.Port() == k.Port()) {
			return false
		}
	}
	return true
}

// Validate checks f and returns a *ValidationError naming the first bad
// field ("Protocol", "Addr", "Keep[1]"; Delete prefixes it with the
// filter's index, "filters[2].Keep[1]").
func (f *Filter) Validate() error {
	bad := func(field, value, reason string) error {
		return &ValidationError{Field: field, Value: value, Reason: reason}
	}
	switch f.Protocol {
	case TCP, UDP, SCTP:
	default:
		return bad("Protocol", strconv.Itoa(int(f.Protocol)), "must be TCP, UDP or SCTP")
	}
	var fam Family
	check := func(field string, a netip.Addr) error {
		switch {
		case !a.IsValid():
			return bad(field, "", "the zero address")
		case a.Is4In6():
			return bad(field, a.String(), "an IPv4-mapped IPv6 address: give the IPv4 address")
		case a.Zone() != "":
			return bad(field, a.String(), "has a zone")
		}
		if fam == 0 {
			fam = inet.FamilyOf(a)
		} else if inet.FamilyOf(a) != fam {
			return bad(field, a.String(), "is "+inet.FamilyOf(a).String()+" in a filter whose addresses are "+fam.String())
		}
		return nil
	}
	if f.Addr.IsValid() {
		if err := check("Addr", f.Addr); err != nil {
			return err
		}
	}
	for i, k := range f.Keep {
		if err := check("Keep["+strconv.Itoa(i)+"]", k.Addr()); err != nil {
			return err
		}
	}
	return nil
}
