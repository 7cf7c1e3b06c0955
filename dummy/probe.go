package dummy

import (
	"context"

	"github.com/ipvskit/ipvskit/internal/kerr"
)

// Probe reports whether the kernel has the dummy link type, changing
// nothing: it asks for a dummy link with an invalid (multicast) hardware
// address under a random name, which the kernel refuses after it found the
// link type (so a kernel that loads modules on demand loads dummy, as
// Ensure would) and before it makes anything. If the kernel has no dummy
// link type the error wraps ErrNotSupported and names the module, dummy.
// The Client asks once and keeps the answer (present or missing; any other
// error is not kept): a new Client asks again.
func (c *Client) Probe(ctx context.Context) error { return c.probes.Run(ctx, dummyLinks(), c.c.probe) }

// dummyLinks is the dummy link type, the feature Probe asks for.
func dummyLinks() kerr.Feature { return kerr.Feature{Name: "dummy links", Module: "dummy"} }
