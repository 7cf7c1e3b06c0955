package ipvs

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/ipvskit/ipvskit/inet"
)

// TestIntegrationProbeSchedulerChangesNothing asks for schedulers the rig
// loads and for one no kernel has, in a namespace where another program
// has virtual servers, an IPv6 fwmark one among them (the kind the probe
// sends), and checks they are all there as they were.
func TestIntegrationProbeSchedulerChangesNothing(t *testing.T) {
	c, ns := newTestClient(t)
	ipvsadmRestore(t, ns,
		"-A -t 198.18.0.1:80 -s wrr",
		"-a -t 198.18.0.1:80 -r 198.18.1.1:8080 -m -w 2",
		"-A -f 1 -6 -s sh",
		"-A -f 2 -6 -s rr")
	before := saved(t, ns)
	ctx := context.Background()
	for _, s := range []string{"rr", "wrr", "sh", "mh", "none"} {
		if err := c.ProbeScheduler(ctx, s); err != nil {
			t.Errorf("ProbeScheduler(%s): %v", s, err)
		}
	}
	err := c.ProbeScheduler(ctx, "nosuch")
	var u *inet.UnsupportedFeatureError
	if !errors.As(err, &u) || !errors.Is(err, ErrNotSupported) || u.Module != "ip_vs_nosuch" {
		t.Errorf("ProbeScheduler(nosuch) = %v, want an unsupported feature naming module ip_vs_nosuch", err)
	}
	var ve *ValidationError
	if err := c.ProbeScheduler(ctx, "a-name-far-too-long"); !errors.As(err, &ve) {
		t.Errorf("a 19-byte name: %v, want a *ValidationError", err)
	}
	if after := saved(t, ns); !slices.Equal(before, after) {
		t.Errorf("the probes changed the virtual servers:\nbefore %q\nafter  %q", before, after)
	}
}
