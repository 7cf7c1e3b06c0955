package proxier

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/vishvananda/netns"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/internal/names"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/sysctl"
)

// openDeps opens every client of Deps in the namespace fd (0: the
// caller's), for cfg, which is valid. On failure it closes what it opened.
func openDeps(ctx context.Context, cfg *Config, fd int) (Deps, closers, error) {
	h := netns.NsHandle(fd) // each client keeps its own copy
	var cl closers
	// opened keeps c to be closed, and checks ctx before the next client
	// (no constructor takes one).
	opened := func(c io.Closer, err error) error {
		if err != nil {
			return err
		}
		cl = append(cl, c.Close)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("stopped once it was open: %w", err)
		}
		return nil
	}
	fail := func(what string, err error) (Deps, closers, error) {
		return Deps{}, nil, errors.Join(fmt.Errorf("proxier: opening the %s: %w", what, err), cl.close())
	}
	instance := cfg.Instance
	if instance == "" {
		instance = DefaultInstance
	}
	ipvsc, err := ipvs.New(&ipvs.Config{NetNS: h})
	if err := opened(ipvsc, err); err != nil {
		return fail("IPVS client", err)
	}
	link, err := dummy.New(&dummy.Config{NetNS: h, Owner: names.Mark(instance)})
	if err := opened(link, err); err != nil {
		return fail("VIP link client", err)
	}
	sys, err := sysctl.New(&sysctl.Config{NetNS: h})
	if err := opened(sys, err); err != nil {
		return fail("sysctl client", err)
	}
	ct, err := conntrack.New(&conntrack.Config{NetNS: h})
	if err := opened(ct, err); err != nil {
		return fail("conntrack client", err)
	}
	d := Deps{IPVS: ipvsc, Link: link, Sysctls: sys, Conntrack: ct, Rules: map[Family]Rules{}}
	fams := enabledFamilies(cfg)
	for _, f := range []Family{IPv4, IPv6} {
		if !fams[f] {
			continue
		}
		r, err := openRules(cfg, f, h)
		if err := opened(r, err); err != nil {
			return fail(fmt.Sprintf("%v %v back end", f, cfg.Backend), err)
		}
		d.Rules[f] = r
	}
	return d, cl, nil
}

// openRules opens the netfilter back end cfg.Backend names for family f.
func openRules(cfg *Config, f Family, h netns.NsHandle) (iptables.Backend, error) {
	if cfg.Backend == IPTables {
		return iptables.NewIPTables(&iptables.IPTablesConfig{NetNS: h, Family: f, Instance: cfg.Instance,
			KubeProxyNames: cfg.KubeProxyNames, AdoptKubeProxy: cfg.AdoptKubeProxy})
	}
	return iptables.NewNFTables(&iptables.NFTablesConfig{NetNS: h, Family: f, Instance: cfg.Instance,
		KubeProxyNames: cfg.KubeProxyNames})
}
