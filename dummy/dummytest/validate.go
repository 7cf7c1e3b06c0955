package dummytest

import (
	"net/netip"

	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/internal/linkcheck"
)

// checkName refuses a link name as dummy.Client does.
func checkName(name string) error {
	if reason := linkcheck.Name(name); reason != "" {
		return &dummy.ValidationError{Field: "name", Value: name, Reason: reason}
	}
	return nil
}

// checkAddr refuses a VIP as dummy.Client does, naming the argument field.
func checkAddr(field string, a netip.Addr) error {
	if reason := linkcheck.VIP(a); reason != "" {
		return &dummy.ValidationError{Field: field, Value: a.String(), Reason: reason}
	}
	return nil
}
