package conntrack_test

import (
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// Probe answers on a kernel with ctnetlink (newClient proved it has it with
// a Delete) and fails with fs.ErrClosed once the client is closed.
func TestIntegrationProbe(t *testing.T) {
	ns := testutil.NewNetNS(t)
	c := newClient(t, ns)
	if err := c.Probe(context.Background()); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	c.Close()
	if err := c.Probe(context.Background()); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Probe after Close: %v, want fs.ErrClosed", err)
	}
}
