package ipvs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"golang.org/x/sys/unix"
)

// probeScheduler sends NEW_SERVICE for an IPv6 fwmark service whose netmask
// (prefix length) is 0. ip_vs_add_service looks the scheduler up first
// (ENOENT if the kernel has none of that name) and checks the IPv6 prefix
// length (1-128) next, before it allocates anything: EINVAL means the
// scheduler exists. A fwmark that a service already has answers EEXIST
// before either check, so another is tried.
func (c *client) probeScheduler(ctx context.Context, name string) error {
	for range 8 {
		mark := 1 + rand.Uint32N(1<<31)
		_, err := c.exec(ctx, "probe scheduler", name, 0, schedulerProbeRequest(name, mark))
		switch {
		case errors.Is(err, unix.EINVAL):
			return nil
		case errors.Is(err, unix.ENOENT):
			return schedulerFeature(name).Missing(err)
		case errors.Is(err, unix.EEXIST):
			continue
		case err == nil:
			// A kernel that accepted the probe made a service: undo it.
			k := ServiceKey{Family: IPv6, FWMark: mark}
			derr := c.serviceOp(ctx, OpDeleteService, keyService(k))
			return errors.Join(fmt.Errorf("ipvs: probe scheduler %s: the kernel accepted an invalid service (fwmark %d), deleted again", name, mark), derr)
		default:
			return err
		}
	}
	return fmt.Errorf("ipvs: probe scheduler %s: every fwmark tried is in use", name)
}
