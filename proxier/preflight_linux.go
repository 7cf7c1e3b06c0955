package proxier

import (
	"context"
	"errors"
	"fmt"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/sysctl"
	"github.com/vishvananda/netns"
)

// preflight runs the probes of needs in the namespace, each through its
// package's client.
func preflight(ctx context.Context, cfg *Config, netnsFD int, opts *PreflightOptions) error {
	ns := netns.NsHandle(netnsFD)
	sys, err := sysctl.New(&sysctl.Config{NetNS: ns})
	if err != nil {
		return fmt.Errorf("proxier: preflight: %w", err)
	}
	defer sys.Close()
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
			ipvsc, err = ipvs.New(&ipvs.Config{NetNS: ns})
			if errors.Is(err, ipvs.ErrNotSupported) {
				err = &UnsupportedFeatureError{Feature: "IPVS", Module: "ip_vs", Err: err}
			}
			if err == nil {
				defer ipvsc.Close()
			}
			r.add(err)
		case needScheduler:
			if ipvsc != nil {
				r.addScheduler(n.name, ipvsc.ProbeScheduler(ctx, n.name))
			}
		case needDummy:
			r.add(probeDummy(ctx, ns))
		case needNFTables:
			r.add(probeNFTables(ctx, ns, n.family))
		case needIPTables:
			r.add(probeIPTables(ctx, ns, n.family))
		case needConntrack:
			r.add(probeConntrack(ctx, ns))
		case needSysctl:
			_, err := sys.Get(ctx, n.name)
			r.addSysctl(err)
		}
	}
	return errors.Join(r.errs...)
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

func (r *report) addScheduler(name string, err error) {
	var missing *UnsupportedFeatureError
	if errors.As(err, &missing) && missing.MinKernel == "" {
		missing.MinKernel = schedulerSince[name]
	}
	r.add(err)
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

func probeDummy(ctx context.Context, ns netns.NsHandle) error {
	c, err := dummy.New(&dummy.Config{NetNS: ns})
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Probe(ctx)
}

func probeNFTables(ctx context.Context, ns netns.NsHandle, f Family) error {
	b, err := iptables.NewNFTables(&iptables.NFTablesConfig{NetNS: ns, Family: f})
	if errors.Is(err, iptables.ErrNotSupported) {
		return &UnsupportedFeatureError{Feature: "nftables (" + f.String() + ")", Module: "nf_tables", Err: err}
	}
	if err != nil {
		return err
	}
	defer b.Close()
	return b.Probe(ctx)
}

func probeIPTables(ctx context.Context, ns netns.NsHandle, f Family) error {
	b, err := iptables.NewIPTables(&iptables.IPTablesConfig{NetNS: ns, Family: f})
	if err != nil {
		return err // the binaries, or ipset (module ip_set): the error names them
	}
	defer b.Close()
	return b.Probe(ctx)
}

func probeConntrack(ctx context.Context, ns netns.NsHandle) error {
	c, err := conntrack.New(&conntrack.Config{NetNS: ns})
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Probe(ctx)
}
