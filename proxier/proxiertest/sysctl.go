package proxiertest

import (
	"context"
	"fmt"

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
	return read(w.in, proxier.SubsystemSysctl, "Sysctls.IPVSProfile", "IPVS profile for the running kernel",
		func() (sysctl.Profile, error) { return w.next.IPVSProfile(o) }, same)
}

func (w *sysctlDep) Apply(ctx context.Context, p sysctl.Profile) ([]sysctl.Change, error) {
	return read(w.in, proxier.SubsystemSysctl, "Sysctls.Apply", fmt.Sprintf("apply a profile of %d settings", len(p)),
		func() ([]sysctl.Change, error) { return w.next.Apply(ctx, p) }, same)
}
