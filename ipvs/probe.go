package ipvs

import (
	"context"

	"github.com/ipvskit/ipvskit/internal/kerr"
)

// ProbeScheduler reports whether the kernel has the scheduler called name
// ("rr", "sh", "mh", ...), changing nothing: it asks IPVS to add an IPv6
// firewall-mark service with an invalid persistence prefix length, which the
// kernel refuses after looking the scheduler up and before making anything
// (so a kernel that loads modules on demand loads the scheduler's, as adding
// a real service would). A fwmark already in use is not touched: the probe
// picks another.
//
// It returns nil if the scheduler exists, an error wrapping ErrNotSupported
// naming the module (ip_vs_<name>) if not, and a *ValidationError for a name
// that cannot be one (with the first kernel that has the scheduler when it
// is newer than Linux 4.x, e.g. twos: 6.2). A kernel built without IPv6 IPVS
// cannot be asked: the error then wraps unix.EAFNOSUPPORT.
//
// The Client asks the kernel once per scheduler and keeps the answer
// (present or missing; any other error is not kept): a new Client asks
// again.
func (c *Client) ProbeScheduler(ctx context.Context, name string) error {
	if err := validateName("scheduler", name, schedNameMax, true); err != nil {
		return err
	}
	return c.probes.Run(ctx, schedulerFeature(name), func(ctx context.Context) error {
		return c.c.probeScheduler(ctx, name)
	})
}

// schedulerFeature is the scheduler called name: its module, and its first
// kernel when it is newer than Linux 4.x.
func schedulerFeature(name string) kerr.Feature {
	f := kerr.Feature{Name: "IPVS scheduler " + name, Module: "ip_vs_" + name}
	if name == "twos" {
		f.MinKernel = "6.2"
	}
	return f
}

// schedulerProbeRequest is NEW_SERVICE for IPv6 fwmark service mark with
// scheduler name and a persistence prefix length (netmask) of 0, which the
// kernel refuses (1-128) after it looked the scheduler up.
func schedulerProbeRequest(name string, mark uint32) []byte {
	e := genl(nil, cmdNewService)
	n := e.Nest(cmdAttrService)
	e.Uint16(svcAttrAF, uint16(IPv6))
	e.Uint32(svcAttrFWMark, mark)
	e.String(svcAttrSchedName, name)
	e.Attr(svcAttrFlags, make([]byte, 8))
	e.Uint32(svcAttrTimeout, 0)
	e.Attr(svcAttrNetmask, make([]byte, 4)) // prefix length 0: invalid
	e.End(n)
	return e.Bytes()
}
