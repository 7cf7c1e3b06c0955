package sysctl

import (
	"strconv"
)

// Setting is one key and the value a profile wants for it.
type Setting struct {
	Key   string // a path below /proc/sys, or the dotted form (see NormalizeKey)
	Value string
	Why   string // what the setting is for; documentation only
}

// Profile is a set of settings that Apply makes and Check verifies.
type Profile []Setting

// Change is one key whose value differs from what a profile wants: Apply
// changed it from Old to New; Check found Old where New is wanted.
type Change struct {
	Key      string
	Old, New string
}

// Kernel versions that decide net/ipv4/vs/conn_reuse_mode.
var (
	// connReuseModeSince is the first kernel with conn_reuse_mode.
	connReuseModeSince = KernelVersion{4, 1, 0}
	// connReuseModeFixed is the first kernel whose default (1) no longer
	// stalls connections that reuse a port (kubernetes#93297).
	connReuseModeFixed = KernelVersion{5, 9, 0}
)

// IPVSOptions chooses the optional parts of IPVSProfile. The zero value means
// no strict ARP and bridge netfilter on.
type IPVSOptions struct {
	// StrictARP adds arp_ignore=1 and arp_announce=2: the node then answers
	// ARP only for addresses on the interface the request came in on, and
	// picks ARP source addresses from the outgoing interface, so it does
	// not advertise the VIPs on the dummy link to the network (MetalLB in
	// L2 mode and other announcers rely on this).
	StrictARP bool
	// IPv6 adds net/ipv6/conf/all/forwarding=1, for a node that serves
	// IPv6 services: without it the node drops a backend's IPv6 replies
	// before IPVS can un-NAT them.
	IPv6 bool
	// ARPInterfaces, if not empty, scopes the strict ARP settings to these
	// interfaces (net/ipv4/conf/<if>/...) instead of "all": setting them on
	// all interfaces broke a CNI plugin that answers ARP for pods on its
	// own links (kubernetes#70530). The kernel uses the larger of the
	// "all" and the interface's value, so this works with "all" left at 0.
	// Needs StrictARP.
	ARPInterfaces []string
	// NoBridgeNetfilter leaves net/bridge/bridge-nf-call-iptables out, for
	// nodes without br_netfilter (no bridged pod traffic).
	NoBridgeNetfilter bool
}

// IPVSProfile returns the settings an IPVS service proxy needs on a node
// running kernel v, as kube-proxy's IPVS mode makes them, each with the
// reason in its Why:
//
//   - net/ipv4/vs/conntrack=1: IPVS keeps netfilter conntrack entries for
//     its connections. Without it, a MASQUERADE or SNAT rule after IPVS
//     silently does nothing.
//   - net/ipv4/vs/conn_reuse_mode=0, on kernels from 4.1 (where the key
//     appeared) up to, not including, 5.9: with the default 1, a client
//     that reuses the source port of a connection in TIME_WAIT stalls for a
//     second (kubernetes#70747). From 5.9 on, the kernel's default is safe
//     and the profile leaves the key alone (kubernetes#93297).
//   - net/ipv4/vs/expire_nodest_conn=1: drop connections whose backend was
//     removed at once, instead of black-holing them until they time out.
//   - net/ipv4/vs/expire_quiescent_template=1: expire session-affinity
//     templates of backends with weight 0, so that draining works with
//     persistence.
//   - net/ipv4/ip_forward=1: masqueraded traffic to backends elsewhere is
//     forwarded.
//   - net/ipv4/conf/all/route_localnet=1: traffic to 127.0.0.0/8 (NodePorts
//     on localhost) may be routed to backends after DNAT.
//   - with o.IPv6: net/ipv6/conf/all/forwarding=1, the same for IPv6.
//   - net/bridge/bridge-nf-call-iptables=1 (unless o.NoBridgeNetfilter):
//     bridged traffic between pods on one node goes through iptables, so
//     that replies to a VIP are un-NATed (needs br_netfilter).
//   - with o.StrictARP: net/ipv4/conf/{all or each of o.ARPInterfaces}/
//     arp_ignore=1 and arp_announce=2 (see IPVSOptions).
//
// o may be nil. An invalid interface name is a *ValidationError.
func IPVSProfile(v KernelVersion, o *IPVSOptions) (Profile, error) {
	if o == nil {
		o = &IPVSOptions{}
	}
	if len(o.ARPInterfaces) > 0 && !o.StrictARP {
		return nil, &ValidationError{Field: "ARPInterfaces", Value: o.ARPInterfaces[0], Reason: "set without StrictARP"}
	}
	for i, name := range o.ARPInterfaces {
		if err := validateInterface("ARPInterfaces["+strconv.Itoa(i)+"]", name); err != nil {
			return nil, err
		}
	}
	p := Profile{{Key: "net/ipv4/vs/conntrack", Value: "1",
		Why: "IPVS keeps conntrack entries, without which masquerading after IPVS does nothing"}}
	if !v.Less(connReuseModeSince) && v.Less(connReuseModeFixed) {
		p = append(p, Setting{Key: "net/ipv4/vs/conn_reuse_mode", Value: "0",
			Why: "before 5.9, the default stalls clients that reuse a source port for 1 s (kubernetes#70747, #93297)"})
	}
	p = append(p,
		Setting{Key: "net/ipv4/vs/expire_nodest_conn", Value: "1",
			Why: "drop connections to removed backends at once instead of black-holing them"},
		Setting{Key: "net/ipv4/vs/expire_quiescent_template", Value: "1",
			Why: "expire session-affinity templates of draining (weight 0) backends"},
		Setting{Key: "net/ipv4/ip_forward", Value: "1",
			Why: "forward traffic to backends on other nodes"},
		Setting{Key: "net/ipv4/conf/all/route_localnet", Value: "1",
			Why: "route traffic to 127.0.0.0/8 NodePorts after DNAT"},
	)
	if o.IPv6 {
		p = append(p, Setting{Key: "net/ipv6/conf/all/forwarding", Value: "1",
			Why: "forward IPv6 traffic to backends, and their replies back through IPVS"})
	}
	if !o.NoBridgeNetfilter {
		p = append(p, Setting{Key: "net/bridge/bridge-nf-call-iptables", Value: "1",
			Why: "pass bridged pod-to-pod traffic through iptables so replies to VIPs are un-NATed"})
	}
	if o.StrictARP {
		ifs := o.ARPInterfaces
		if len(ifs) == 0 {
			ifs = []string{"all"}
		}
		for _, name := range ifs {
			p = append(p,
				Setting{Key: "net/ipv4/conf/" + name + "/arp_ignore", Value: "1",
					Why: "answer ARP only for addresses on the receiving interface, not for VIPs on the dummy link"},
				Setting{Key: "net/ipv4/conf/" + name + "/arp_announce", Value: "2",
					Why: "use the outgoing interface's address as ARP source, never a VIP"})
		}
	}
	return p, nil
}

// validateInterface checks an interface name for a conf/<if>/ key.
func validateInterface(field, name string) error {
	bad := func(reason string) error { return &ValidationError{Field: field, Value: name, Reason: reason} }
	switch {
	case name == "":
		return bad("empty")
	case len(name) > 15:
		return bad("longer than 15 bytes")
	case name == "." || name == "..":
		return bad("not an interface name")
	case name == "all" || name == "default":
		return bad("not an interface; leave ARPInterfaces empty for all")
	}
	for _, r := range name {
		if r == '/' || r == ':' || r <= ' ' || r >= 0x7f {
			return bad("contains " + strconv.QuoteRune(r))
		}
	}
	return nil
}
