package nsfd

import (
	"testing"

	"github.com/vishvananda/netns"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		fd    int
		ok    bool
		value string
	}{
		{0, true, ""},
		{3, true, ""},
		{int(netns.None()), false, "-1"},
		{-7, false, "-7"},
	} {
		value, reason, ok := Check(tc.fd)
		if ok != tc.ok || value != tc.value || (!ok && reason != Rule) {
			t.Errorf("Check(%d) = %q, %q, %v; want %q, the rule, %v", tc.fd, value, reason, ok, tc.value, tc.ok)
		}
	}
}
