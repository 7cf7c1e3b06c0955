package ipset

import (
	"errors"
	"net/netip"
)

func errorsIs(err, target error) bool { return errors.Is(err, target) }

func netipAddr(s string) netip.Addr     { return netip.MustParseAddr(s) }
func netipPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }
