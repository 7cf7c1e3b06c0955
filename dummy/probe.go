package dummy

import "context"

// Probe reports whether the kernel has the dummy link type, changing
// nothing: it asks for a dummy link with an invalid (multicast) hardware
// address under a random name, which the kernel refuses after it found the
// link type (so a kernel that loads modules on demand loads dummy, as
// Ensure would) and before it makes anything. If the kernel has no dummy
// link type the error wraps ErrNotSupported and names the module, dummy.
func (c *Client) Probe(ctx context.Context) error { return c.c.probe(ctx) }
