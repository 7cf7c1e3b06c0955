package iptables

import "context"

// Probe tries each kernel feature the back end's table uses (the set types,
// the filter and nat chain types, the ct, fib, masq and reject expressions)
// in a throw-away table ipvskit-probe-<random> of its own, deleted again at
// once, and touches nothing else. It returns nil, or the refused features
// joined (errors.Join), each an error wrapping ErrNotSupported that names the
// feature and its module, so a caller sees every missing module at once.
// It does not need, nor read, the back end's own table. Each feature is
// asked once per back end (the diagnosis of a failed sync shares the
// answers); any failure other than a missing feature is not kept.
func (n *NFTablesBackend) Probe(ctx context.Context) error { return n.b.probeAll(ctx) }

// Probe checks, changing nothing, that the kernel has what the back end's
// rules use: each ipset type (the TYPE query Create also sends), and each
// match and target of the rules (set, comment, addrtype, conntrack, mark,
// physdev, ipvs; MARK, MASQUERADE, REJECT), asked the way the flavor's
// binary asks (a revision query: x_tables' for legacy, nft_compat's for
// nft). It returns nil, or the missing features joined (errors.Join), each
// an error wrapping ErrNotSupported that names the feature and its module.
// That the binaries run was checked when the back end was made.
func (t *IPTablesBackend) Probe(ctx context.Context) error { return t.b.probe(ctx) }
