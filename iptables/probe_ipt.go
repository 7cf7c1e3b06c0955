package iptables

import (
	"context"
	"errors"

	"github.com/ipvskit/ipvskit/ipset"
)

// The matches and targets the rules use (restore.go), by extension name.
var (
	xtMatches = []string{"set", "comment", "addrtype", "conntrack", "mark", "physdev", "ipvs"}
	xtTargets = []string{"MARK", "MASQUERADE", "REJECT"}
)

// typeProber is what Probe needs of the ipset client (*ipset.Client).
type typeProber interface {
	TypeRevision(ctx context.Context, t ipset.Type, f ipset.Family) (uint8, error)
}

// probe asks the kernel for every ipset type and extension the rules use.
func (b *iptBackend) probe(ctx context.Context) error {
	var errs []error
	if tp, ok := b.sets.(typeProber); ok {
		seen := map[[2]uint8]bool{}
		for _, s := range Sets() {
			if !s.isIPSet() {
				continue
			}
			spec := ipsetSpec(b.names, b.fam, s)
			k := [2]uint8{uint8(spec.Type), uint8(spec.Family)}
			if seen[k] {
				continue
			}
			seen[k] = true
			if _, err := tp.TypeRevision(ctx, spec.Type, spec.Family); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(append(errs, b.probeExtensions(ctx)...)...)
}
