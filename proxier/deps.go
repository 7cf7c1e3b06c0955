package proxier

import (
	"context"
	"net/netip"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/sysctl"
)

// IPVS is what the Proxier needs of an IPVS client: *ipvs.Client and
// ipvstest's fake satisfy it.
type IPVS interface {
	Apply(ctx context.Context, b *ipvs.Batch) error
	Services(ctx context.Context) ([]ipvs.ServiceInfo, error)
	Destinations(ctx context.Context, k ipvs.ServiceKey) ([]ipvs.DestinationInfo, error)
}

// Link is what the Proxier needs of the VIP link's client: *dummy.Client and
// dummytest's fake satisfy it.
type Link interface {
	Ensure(ctx context.Context, name string) (created bool, err error)
	Addrs(ctx context.Context, name string) ([]netip.Prefix, error)
	// Update binds add and unbinds remove, idempotently, in few requests.
	Update(ctx context.Context, name string, add, remove []netip.Addr) error
	Delete(ctx context.Context, name string) error
}

// Sysctls is what the Proxier needs of a sysctl client: *sysctl.Client and
// sysctltest's fake satisfy it.
type Sysctls interface {
	IPVSProfile(o *sysctl.IPVSOptions) (sysctl.Profile, error)
	Apply(ctx context.Context, p sysctl.Profile) ([]sysctl.Change, error)
	// Check returns the keys of p whose value differs, changing nothing.
	Check(ctx context.Context, p sysctl.Profile) ([]sysctl.Change, error)
}

// Conntrack is what the Proxier needs to delete stale flows:
// *conntrack.Client and conntracktest's fake satisfy it.
type Conntrack interface {
	Delete(ctx context.Context, filters ...conntrack.Filter) (int, error)
}
