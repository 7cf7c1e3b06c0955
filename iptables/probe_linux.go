package iptables

import (
	"context"
	"errors"
	"fmt"

	"github.com/ipvskit/ipvskit/inet"
)

// probeAll runs every probe, each in a throw-away table of its own, and
// joins one error per feature the kernel refuses.
func (b *nftBackend) probeAll(ctx context.Context) error {
	var errs []error
	for _, p := range b.probes {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		err := b.probe(ctx, p)
		switch {
		case err == nil:
		case missingFeature(err):
			errs = append(errs, &inet.UnsupportedFeatureError{
				Feature: "nftables " + p.kind + " (" + b.cfg.Family.String() + ")",
				Module:  nftModule(p.kind, b.cfg.Family), Err: err})
		default:
			errs = append(errs, fmt.Errorf("nftables: probing the %s: %w", p.kind, err))
		}
	}
	return errors.Join(errs...)
}
