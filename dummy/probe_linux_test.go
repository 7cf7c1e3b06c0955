//go:build linux

package dummy_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/internal/testutil"
)

// Probe agrees with ip(8) on whether the kernel has dummy links (the build
// machine's has none, the rig's has them), and makes no link either way:
// another program's links, one with the probe's name prefix, stay as they
// were.
func TestIntegrationProbeAgreesWithIPAndMakesNoLink(t *testing.T) {
	ns := testutil.NewNetNS(t)
	c := newClient(t, ns)
	ns.Exec(t, "ip", "link", "add", "ipvskit0", "type", "veth", "peer", "name", "ipvskit-p000000")
	before := ns.Exec(t, "ip", "-d", "link", "show")
	err := c.Probe(context.Background())
	if after := ns.Exec(t, "ip", "-d", "link", "show"); after != before {
		t.Errorf("Probe changed the links:\n--- before\n%s--- after\n%s", before, after)
	}
	_, oracle := ns.TryExec(t, nil, "ip", "link", "add", "oracle0", "type", "dummy")
	var u *inet.UnsupportedFeatureError
	switch {
	case oracle == nil && err != nil:
		t.Errorf("ip made a dummy link, Probe says: %v", err)
	case oracle != nil && (!errors.As(err, &u) || u.Module != "dummy" || !errors.Is(err, dummy.ErrNotSupported)):
		t.Errorf("ip cannot make a dummy link (%v); Probe says %v, want a missing feature naming module dummy", oracle, err)
	}
}
