package nlconntest

import (
	"fmt"

	"github.com/mdlayher/netlink"
)

// HeaderType checks that a request has netlink message type t.
func HeaderType(t netlink.HeaderType) func(netlink.Message) error {
	return func(m netlink.Message) error {
		if m.Header.Type != t {
			return fmt.Errorf("message type %d, want %d", m.Header.Type, t)
		}
		return nil
	}
}

// Flags checks that a request's header has every flag of f set.
func Flags(f netlink.HeaderFlags) func(netlink.Message) error {
	return func(m netlink.Message) error {
		if m.Header.Flags&f != f {
			return fmt.Errorf("flags %v, want %v set", m.Header.Flags, f)
		}
		return nil
	}
}

// GenlCommand checks that a generic netlink request carries command cmd
// (the first byte of its genetlink header).
func GenlCommand(cmd uint8) func(netlink.Message) error {
	return func(m netlink.Message) error {
		if len(m.Data) < 4 {
			return fmt.Errorf("%d bytes, too short for a genetlink header", len(m.Data))
		}
		if m.Data[0] != cmd {
			return fmt.Errorf("genetlink command %d, want %d", m.Data[0], cmd)
		}
		return nil
	}
}

// All checks a request with every check in turn, stopping at the first
// failure.
func All(checks ...func(netlink.Message) error) func(netlink.Message) error {
	return func(m netlink.Message) error {
		for _, c := range checks {
			if err := c(m); err != nil {
				return err
			}
		}
		return nil
	}
}
