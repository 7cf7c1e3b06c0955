package proxier

import (
	"context"
	"errors"

	"github.com/vishvananda/netns"
)

// Open returns a Proxier for one network namespace, with every kernel client
// it needs opened by it and owned by it: IPVS, the VIP link, sysctls,
// conntrack, and a netfilter back end per family of cfg.Families, the one
// cfg.Backend names. ns is the namespace, a netns.NsHandle as every kernel
// client's Config.NetNS: 0 means the caller's, a positive handle is an open
// file descriptor of a network namespace (as from netns.Get, or an open of
// /proc/PID/ns/net or /run/netns/NAME), which the caller may close once
// Open returns (the Proxier keeps a copy). The clients
// are named by cfg.Instance as the Proxier's objects are. Nil cfg means the
// zero Config.
//
// Open checks cfg and ns first: a *ValidationError lists every problem
// (a negative ns, or one that is not a network namespace, is one at path
// "netns"), and nothing is opened. Like New, it changes nothing in the
// kernel: the first Sync does. If a client cannot be opened, or ctx ends
// before the last is, Open closes those it had opened and returns an error
// naming the client, wrapping the cause: ErrNotSupported of package ipvs
// (the same error in every package of this module) for a kernel without
// IPVS or on a system other than Linux.
//
// The Proxier's Close closes what Open opened. Programs that need another
// wiring (fakes, a client shared with other code, a pinned iptables flavor)
// build the clients themselves and call New.
func Open(ctx context.Context, cfg *Config, ns netns.NsHandle) (*Proxier, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	v := &validator{}
	v.config(cfg)
	v.netns("netns", int(ns))
	if err := v.err(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	deps, cl, err := openDeps(ctx, cfg, ns)
	if err != nil {
		return nil, err
	}
	p, err := New(cfg, deps)
	if err != nil {
		return nil, errors.Join(err, cl.close())
	}
	p.closers = cl
	return p, nil
}

// closers close what Open opened, last opened first.
type closers []func() error

func (c closers) close() error {
	var errs []error
	for i := len(c) - 1; i >= 0; i-- {
		errs = append(errs, c[i]())
	}
	return errors.Join(errs...)
}
