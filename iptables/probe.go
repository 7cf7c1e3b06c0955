package iptables

import "context"

// Probe tries each kernel feature the back end's table uses (the set types,
// the filter and nat chain types, the ct, fib, masq and reject expressions)
// in a throw-away table ipvskit-probe-<random> of its own, deleted again at
// once, and touches nothing else. It returns nil, or the refused features
// joined (errors.Join), each an error wrapping ErrNotSupported that names the
// feature and its module, so a caller sees every missing module at once.
// It does not need, nor read, the back end's own table.
func (n *NFTables) Probe(ctx context.Context) error { return n.b.probeAll(ctx) }
