package iptables

import (
	"context"
	"errors"
	"fmt"

	"github.com/ipvskit/ipvskit/internal/kerr"
)

// probeAll runs every probe, each in a throw-away table of its own, and
// joins one error per feature the kernel refuses.
func (b *nftBackend) probeAll(ctx context.Context) error {
	var errs []error
	for _, p := range b.probes {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		err := b.probeFeature(ctx, p)
		switch {
		case err == nil:
		case errors.Is(err, ErrNotSupported):
			errs = append(errs, err)
		default:
			errs = append(errs, fmt.Errorf("nftables: probing the %s: %w", p.kind, err))
		}
	}
	return errors.Join(errs...)
}

// feature is what p asks for, in the back end's family.
func (b *nftBackend) feature(p nftProbe) kerr.Feature {
	return kerr.Feature{Name: "nftables " + p.kind + " (" + b.cfg.Family.String() + ")", Module: nftModule(p.kind, b.cfg.Family)}
}

// probeFeature answers whether the kernel has p's feature, asking it (in a
// throw-away table) only the first time: nil, an error wrapping
// ErrNotSupported that names the feature and its module, or the failure of
// the probe itself.
func (b *nftBackend) probeFeature(ctx context.Context, p nftProbe) error {
	f := b.feature(p)
	return b.answers.Run(ctx, f, func(ctx context.Context) error {
		err := b.probe(ctx, p)
		if missingFeature(err) {
			return f.Missing(err)
		}
		return err
	})
}
