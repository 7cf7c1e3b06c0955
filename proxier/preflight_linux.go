package proxier

import (
	"context"
	"errors"
	"fmt"

	"github.com/ipvskit/ipvskit/internal/kerr"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/sysctl"
	"github.com/vishvananda/netns"
)

// preflight runs the probes of needs in the namespace, each through the
// client Open would make for it (the same wiring), and closes them.
func preflight(ctx context.Context, cfg *Config, ns netns.NsHandle, opts *PreflightOptions) error {
	w := newWiring(cfg, ns)
	defer func() { _ = w.cl.close() }()
	sys, err := w.sysctls()
	if err != nil {
		return fmt.Errorf("proxier: preflight: %w", err)
	}
	profile, err := sys.IPVSProfile(sysctlOptions(cfg))
	if err != nil {
		return fmt.Errorf("proxier: preflight: sysctl profile: %w", err)
	}

	r := &report{seen: map[string]bool{}}
	var ipvsc *ipvs.Client
	for _, n := range needs(cfg, opts, profile) {
		if ctx.Err() != nil {
			r.add(ctx.Err())
			break
		}
		switch n.kind {
		case needIPVS:
			ipvsc, err = w.ipvs()
			if errors.Is(err, ipvs.ErrNotSupported) {
				err = ipvsFeature().Missing(err)
			}
			r.add(err)
		case needScheduler:
			if ipvsc != nil {
				r.add(ipvsc.ProbeScheduler(ctx, n.name))
			}
		case needDummy:
			r.add(probeDummy(ctx, w))
		case needNFTables, needIPTables:
			r.add(probeRules(ctx, w, n.family))
		case needConntrack:
			r.add(probeConntrack(ctx, w))
		case needSysctl:
			_, err := sys.Get(ctx, n.name)
			r.addSysctl(err)
		}
	}
	return errors.Join(r.errs...)
}

// ipvsFeature is IPVS itself, which ipvs.New finds missing.
func ipvsFeature() kerr.Feature { return kerr.Feature{Name: "IPVS", Module: "ip_vs"} }

// nfTablesFeature is nftables in family f, which iptables.NewNFTables finds
// missing.
func nfTablesFeature(f Family) kerr.Feature {
	return kerr.Feature{Name: "nftables (" + f.String() + ")", Module: "nf_tables"}
}

// report collects the probes' errors: one *UnsupportedFeatureError per
// module, every other error as it is.
type report struct {
	errs []error
	seen map[string]bool // modules reported
}

func (r *report) add(err error) {
	if err == nil {
		return
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			r.add(e)
		}
		return
	}
	var missing *UnsupportedFeatureError
	if !errors.As(err, &missing) {
		r.errs = append(r.errs, err)
	} else if !r.seen[missing.Module] {
		r.seen[missing.Module] = true
		r.errs = append(r.errs, missing)
	}
}

// addSysctl turns a key that does not exist for want of a module into an
// *UnsupportedFeatureError.
func (r *report) addSysctl(err error) {
	var ne *sysctl.NotExistError
	if errors.As(err, &ne) && ne.Module != "" {
		err = &UnsupportedFeatureError{Feature: "sysctl " + ne.Key, Module: ne.Module, Err: err}
	}
	r.add(err)
}

func probeDummy(ctx context.Context, w *wiring) error {
	c, err := w.link()
	if err != nil {
		return err
	}
	return c.Probe(ctx)
}

// prober is a netfilter back end's Probe: both of package iptables have
// one.
type prober interface {
	Probe(ctx context.Context) error
}

// probeRules probes the back end cfg.Backend names for family f. A missing
// iptables binary or ipset (module ip_set) is New's error, which names
// them.
func probeRules(ctx context.Context, w *wiring, f Family) error {
	b, err := w.rules(f)
	if w.cfg.Backend != IPTables && errors.Is(err, iptables.ErrNotSupported) {
		return nfTablesFeature(f).Missing(err)
	}
	if err != nil {
		return err
	}
	p, ok := b.(prober)
	if !ok {
		return fmt.Errorf("proxier: preflight: the %v back end has no probe", w.cfg.Backend)
	}
	return p.Probe(ctx)
}

func probeConntrack(ctx context.Context, w *wiring) error {
	c, err := w.conntrack()
	if err != nil {
		return err
	}
	return c.Probe(ctx)
}
