//go:build !linux

package vm

import "errors"

// Agent runs only inside the Linux guest.
func Agent() error { return errors.New("vm agent: only on Linux") }

// PowerOff does nothing outside the Linux guest.
func PowerOff() {}
