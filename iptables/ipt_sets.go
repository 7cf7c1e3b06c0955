package iptables

import (
	"fmt"
	"strconv"

	"github.com/ipvskit/ipvskit/ipset"
)

// ipsetSpec returns the ipset that holds s for family f, named by n.
func ipsetSpec(n *iptNames, f Family, s SetName) ipset.Set {
	spec := ipset.Set{Name: n.ipset(s, f)}
	switch s.Shape() {
	case ShapeAddr:
		spec.Type = ipset.HashIP
	case ShapeAddrPort:
		spec.Type = ipset.HashIPPort
	case ShapeAddrPortAddr:
		spec.Type = ipset.HashIPPortIP
	case ShapeAddrPortNet:
		spec.Type = ipset.HashIPPortNet
	case ShapePort:
		spec.Type = ipset.BitmapPort
		return spec
	}
	spec.Family = f // inet.IPv4 or inet.IPv6
	return spec
}

func ipsetEntry(m Member) ipset.Entry {
	return ipset.Entry{IP: m.Addr, Proto: m.Proto, Port: m.Port, IP2: m.Addr2, Net2: m.Net}
}

func ipsetEntries(ms []Member) []ipset.Entry {
	out := make([]ipset.Entry, len(ms))
	for i, m := range ms {
		out[i] = ipsetEntry(m)
	}
	return out
}

// checkIPSetLimits checks what only the iptables back end limits: a hash
// ipset holds at most ipset.DefaultMaxElem members.
func checkIPSetLimits(r *Ruleset) error {
	for _, s := range Sets() {
		if s.isIPSet() && s.Shape() != ShapePort && r.Len(s) > ipset.DefaultMaxElem {
			return &ValidationError{Field: s.String(), Value: strconv.Itoa(r.Len(s)) + " members",
				Reason: fmt.Sprintf("the ipset holds at most %d", ipset.DefaultMaxElem)}
		}
	}
	return nil
}
