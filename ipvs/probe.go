package ipvs

import "context"

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
// that cannot be one. A kernel built without IPv6 IPVS cannot be asked: the
// error then wraps unix.EAFNOSUPPORT.
func (c *Client) ProbeScheduler(ctx context.Context, name string) error {
	if err := validateName("scheduler", name, schedNameMax, true); err != nil {
		return err
	}
	return c.c.probeScheduler(ctx, name)
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
