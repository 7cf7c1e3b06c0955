package dummy

import (
	"context"
	"net/netip"
)

// RouteProtocol is the routing protocol number (rtm_protocol, "proto" in
// `ip route`) that marks the local routes a Client adds with UpdateRoutes
// as ipvskit's: `ip route show table local proto 173` lists them. It is
// assigned neither in the kernel's include/uapi/linux/rtnetlink.h nor in
// iproute2's rt_protos (Debian's /etc/iproute2/rt_protos and rt_protos.d),
// and lies apart from the numbers routing daemons are known to use (BIRD
// 12, Babel 42, Open/R 99, BGP/IS-IS/OSPF/RIP/EIGRP 186-192, FRR's
// 191-199). The kernel never interprets a number above 4 (RTPROT_STATIC).
//
// A number alone proves nothing (any program can write it), so a route is
// the Client's only when it carries RouteProtocol, is of type local in the
// local table, and goes out of a dummy link with the Client's mark: a route
// of this number on another link, or of another number on the Client's
// link, is never listed or removed.
const RouteProtocol = 173

// Routes returns the VIPs held on the dummy link name as local routes: every
// route in the local table (255) of type local whose output device is the
// link and whose protocol is RouteProtocol, each a host route (/32 or
// /128), both families, sorted. A route that lacks any of these (another
// program's local route for the same address on another link, a route of
// another protocol on this link) is not listed. The error matches
// fs.ErrNotExist if there is no such link, and wraps a *LinkTypeError or
// *ForeignError if name is not a dummy link with the Client's mark.
func (c *Client) Routes(ctx context.Context, name string) ([]netip.Addr, error) {
	return c.c.routes(ctx, name)
}

// UpdateRoutes makes the node's own every address of add by a local route
// on the dummy link name, and takes away those of remove, without binding
// any address: the route is of type local (RTN_LOCAL), in the local table
// (255), of scope host, with the link as its output device and
// RouteProtocol as its mark, as `ip route add local 198.18.0.10/32 dev
// vips0 table local proto 173 scope host` would make it. The kernel then
// delivers packets to the address locally (where IPVS takes them) as it
// does for a bound address, but adding a route costs the same however many
// there are, where binding an IPv4 address walks the link's address list.
//
// The requests go many to a netlink send with one acknowledgement per send,
// as Update's. Adding a route that is there already, or removing one that
// is not, is not an error, so UpdateRoutes is idempotent. A removal names
// the protocol, type, table and link, so the kernel removes only the
// Client's route: another program's local route for the same address (on
// another link, or of another protocol) stays. Every address is validated
// first (a *ValidationError names add[i] or remove[i]) and nothing is
// changed if one is invalid. If the kernel refuses some requests, the others
// still take effect and the error joins one *Error per refusal.
//
// The kernel refuses an IPv6 route on a link that is down (ENETDOWN,
// "Nexthop device is not up"), and drops every IPv6 route on a link that
// goes down; IPv4 local routes need neither. So before it adds an IPv6
// route UpdateRoutes sets the link up if it is down (a dummy link sends
// nothing: what it transmits is dropped; the kernel gives an up link an
// IPv6 link-local address, which Sync and Routes leave alone). Deleting the
// link (Delete) takes every route on it away with it.
func (c *Client) UpdateRoutes(ctx context.Context, name string, add, remove []netip.Addr) error {
	return c.c.updateRoutes(ctx, name, add, remove)
}
