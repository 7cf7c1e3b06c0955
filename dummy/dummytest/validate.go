package dummytest

import (
	"fmt"
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

// checkUpdate checks the arguments of Update and UpdateRoutes as the client
// does: the link name, then each address, named add[i] or remove[i].
func checkUpdate(name string, add, remove []netip.Addr) error {
	if err := checkName(name); err != nil {
		return err
	}
	for i, a := range add {
		if err := checkAddr(fmt.Sprintf("add[%d]", i), a); err != nil {
			return err
		}
	}
	for i, a := range remove {
		if err := checkAddr(fmt.Sprintf("remove[%d]", i), a); err != nil {
			return err
		}
	}
	return nil
}
