package ipvs

import (
	"errors"
	"strconv"
	"testing"

	"github.com/vishvananda/netns"
)

// A negative Config.NetNS is refused before anything is opened: on a system
// without IPVS (or without Linux) New would otherwise fail with
// ErrNotSupported.
func TestNewRefusesNegativeNetNS(t *testing.T) {
	for _, ns := range []netns.NsHandle{netns.None(), -9} {
		c, err := New(&Config{NetNS: ns})
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != "Config.NetNS" || ve.Value != strconv.Itoa(int(ns)) {
			if c != nil {
				c.Close()
			}
			t.Errorf("New(NetNS %d) = %v, want a *ValidationError on Config.NetNS, value %d", ns, err, ns)
		}
	}
}
