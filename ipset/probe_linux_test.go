package ipset

import (
	"errors"
	"testing"

	"github.com/ipvskit/ipvskit/inet"
)

// TypeRevision finds every type the package knows in the kernel (the build
// machine's and the rig's have them all), agrees with Create's choice, and
// makes no set.
func TestIntegrationTypeRevisionChangesNothing(t *testing.T) {
	c, ns := newTestClient(t)
	ctx := ctxT(t)
	if err := c.Create(ctx, Set{Name: "theirs", Type: HashIPPort, Family: inet.IPv4}); err != nil {
		t.Fatal(err)
	}
	before := ns.Exec(t, "ipset", "list")
	for _, tc := range []struct {
		t Type
		f Family
	}{{HashIP, inet.IPv4}, {HashIPPort, inet.IPv6}, {HashIPPortIP, inet.IPv4}, {HashIPPortNet, inet.IPv6}, {BitmapPort, FamilyUnspec}} {
		if _, err := c.TypeRevision(ctx, tc.t, tc.f); err != nil {
			t.Errorf("%v %v: %v", tc.t, tc.f, err)
		}
	}
	h, err := c.Header(ctx, "theirs")
	if err != nil {
		t.Fatal(err)
	}
	if rev, _ := c.TypeRevision(ctx, HashIPPort, inet.IPv4); rev != h.Revision {
		t.Errorf("TypeRevision(hash:ip,port) = %d, Create chose %d", rev, h.Revision)
	}
	var ve *ValidationError
	if _, err := c.TypeRevision(ctx, Type(250), inet.IPv4); !errors.As(err, &ve) {
		t.Errorf("an unknown type: %v, want a *ValidationError", err)
	}
	if after := ns.Exec(t, "ipset", "list"); after != before {
		t.Errorf("the probes changed the sets:\n--- before\n%s--- after\n%s", before, after)
	}
}
