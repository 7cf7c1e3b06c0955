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

// openDeps opens every client of Deps in the namespace ns (0: the
// caller's), for cfg, which is valid. On failure it closes what it opened.
func openDeps(ctx context.Context, cfg *Config, ns netns.NsHandle) (Deps, closers, error) {
	w := newWiring(cfg, ns)
	// opened checks ctx before the next client (no constructor takes one).
	opened := func(err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("stopped once it was open: %w", err)
		}
		return nil
	}
	fail := func(what string, err error) (Deps, closers, error) {
		return Deps{}, nil, errors.Join(fmt.Errorf("proxier: opening the %s: %w", what, err), w.cl.close())
	}
	ipvsc, err := w.ipvs()
	if err := opened(err); err != nil {
		return fail("IPVS client", err)
	}
	link, err := w.link()
	if err := opened(err); err != nil {
		return fail("VIP link client", err)
	}
	sys, err := w.sysctls()
	if err := opened(err); err != nil {
		return fail("sysctl client", err)
	}
	ct, err := w.conntrack()
	if err := opened(err); err != nil {
		return fail("conntrack client", err)
	}
	d := Deps{IPVS: ipvsc, Link: link, Sysctls: sys, Conntrack: ct, Rules: map[Family]Rules{}}
	fams := enabledFamilies(cfg)
	for _, f := range []Family{IPv4, IPv6} {
		if !fams[f] {
			continue
		}
		r, err := w.rules(f)
		if err := opened(err); err != nil {
			return fail(fmt.Sprintf("%v %v back end", f, cfg.Backend), err)
		}
		d.Rules[f] = r
	}
	return d, w.cl, nil
}

// wiring makes a Proxier's kernel clients for cfg in one namespace, one
// at a time, and keeps each it made to be closed. Open (openDeps) and
// Preflight both make their clients through it, so what Preflight probes
// is made exactly as what Sync will use.
type wiring struct {
	cfg      *Config
	h        netns.NsHandle // each client keeps its own copy
	instance string
	cl       closers
}

func newWiring(cfg *Config, ns netns.NsHandle) *wiring {
	instance := cfg.Instance
	if instance == "" {
		instance = DefaultInstance
	}
	return &wiring{cfg: cfg, h: ns, instance: instance}
}

// keep keeps c, made without error, to be closed.
func (w *wiring) keep(c io.Closer) { w.cl = append(w.cl, c.Close) }

// made returns what newClient makes, kept by w to be closed if it was made.
func made[C io.Closer](w *wiring, newClient func() (C, error)) (C, error) {
	c, err := newClient()
	if err == nil {
		w.keep(c)
	}
	return c, err
}

func (w *wiring) ipvs() (*ipvs.Client, error) {
	return made(w, func() (*ipvs.Client, error) { return ipvs.New(&ipvs.Config{NetNS: w.h}) })
}

func (w *wiring) link() (*dummy.Client, error) {
	return made(w, func() (*dummy.Client, error) {
		return dummy.New(&dummy.Config{NetNS: w.h, Owner: names.Mark(w.instance)})
	})
}

func (w *wiring) sysctls() (*sysctl.Client, error) {
	return made(w, func() (*sysctl.Client, error) { return sysctl.New(&sysctl.Config{NetNS: w.h}) })
}

func (w *wiring) conntrack() (*conntrack.Client, error) {
	return made(w, func() (*conntrack.Client, error) { return conntrack.New(&conntrack.Config{NetNS: w.h}) })
}

// rules opens the netfilter back end cfg.Backend names for family f.
func (w *wiring) rules(f Family) (iptables.Interface, error) {
	cfg := w.cfg
	var (
		b   iptables.Interface
		err error
	)
	if cfg.Backend == IPTables {
		b, err = iptables.NewIPTables(&iptables.IPTablesConfig{NetNS: w.h, Family: f, Instance: cfg.Instance,
			KubeProxyNames: cfg.KubeProxyNames, AdoptKubeProxy: cfg.AdoptKubeProxy})
	} else {
		b, err = iptables.NewNFTables(&iptables.NFTablesConfig{NetNS: w.h, Family: f, Instance: cfg.Instance,
			KubeProxyNames: cfg.KubeProxyNames})
	}
	if err != nil {
		return nil, err
	}
	w.keep(b)
	return b, nil
}
