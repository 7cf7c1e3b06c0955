package proxiertest

import (
	"context"
	"strings"

	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/sysctl"
)

// sysctlDep counts and fails the calls of a proxier.Sysctls. An Apply is
// one operation: the client applies a profile all or nothing.
type sysctlDep struct {
	in   *Injector
	next proxier.Sysctls
}

func (w *sysctlDep) IPVSProfile(o *sysctl.IPVSOptions) (sysctl.Profile, error) {
	return valued(w.in, proxier.SubsystemSysctl, "Sysctls.IPVSProfile", "IPVS profile for the running kernel",
		func() (sysctl.Profile, error) { return w.next.IPVSProfile(o) }, same)
}

func (w *sysctlDep) Apply(ctx context.Context, p sysctl.Profile) ([]sysctl.Change, error) {
	return valued(w.in, proxier.SubsystemSysctl, "Sysctls.Apply", "apply a profile: "+keys(p),
		func() ([]sysctl.Change, error) { return w.next.Apply(ctx, p) }, same)
}

func keys(p sysctl.Profile) string {
	ks := make([]string, len(p))
	for i, s := range p {
		ks[i] = s.Key
	}
	return strings.Join(ks, ", ")
}

func (w *sysctlDep) Check(ctx context.Context, p sysctl.Profile) ([]sysctl.Change, error) {
	return valued(w.in, proxier.SubsystemSysctl, "Sysctls.Check", "check a profile: "+keys(p),
		func() ([]sysctl.Change, error) { return w.next.Check(ctx, p) }, same)
}
