package ipset

import (
	"errors"
	"testing"
)

// TypeRevision finds every type the package knows in the kernel (the build
// machine's and the rig's have them all), agrees with Create's choice, and
// makes no set.
func TestIntegrationTypeRevisionChangesNothing(t *testing.T) {
	c, ns := newTestClient(t)
	ctx := ctxT(t)
	if err := c.Create(ctx, Set{Name: "theirs", Type: HashIPPort, Family: INet}); err != nil {
		t.Fatal(err)
	}
	before := ns.Exec(t, "ipset", "list")
	for _, tc := range []struct {
		t Type
		f Family
	}{{HashIP, INet}, {HashIPPort, INet6}, {HashIPPortIP, INet}, {HashIPPortNet, INet6}, {BitmapPort, FamilyUnspec}} {
		if _, err := c.TypeRevision(ctx, tc.t, tc.f); err != nil {
			t.Errorf("%v %v: %v", tc.t, tc.f, err)
		}
	}
	h, err := c.Header(ctx, "theirs")
	if err != nil {
		t.Fatal(err)
	}
	if rev, _ := c.TypeRevision(ctx, HashIPPort, INet); rev != h.Revision {
		t.Errorf("TypeRevision(hash:ip,port) = %d, Create chose %d", rev, h.Revision)
	}
	var ve *ValidationError
	if _, err := c.TypeRevision(ctx, Type(250), INet); !errors.As(err, &ve) {
		t.Errorf("an unknown type: %v, want a *ValidationError", err)
	}
	if after := ns.Exec(t, "ipset", "list"); after != before {
		t.Errorf("the probes changed the sets:\n--- before\n%s--- after\n%s", before, after)
	}
}
