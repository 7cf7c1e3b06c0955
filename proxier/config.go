package proxier

import (
	"log/slog"
	"net/netip"
	"time"

	"github.com/ipvskit/ipvskit/inet"
)

// Config is what is per node rather than per service. The zero value of each
// field is documented default.
type Config struct {
	// Instance names this Proxier's kernel objects, so that several
	// Proxiers (and several programs embedding ipvskit) share a namespace:
	// the VIP link "<instance>0", and, in the back ends built with the same
	// Instance, the nft table "<instance>" and the chains and ipsets
	// "<INSTANCE>-*". Empty means DefaultInstance ("ipvskit"). 1-12 bytes of
	// a-z, 0-9 and inner '-', starting with a letter; names that are other
	// programs' (starting "kube" or "docker", "filter", "nat", ...) are
	// refused. Build Deps' clients for the same instance: the back ends
	// with this Instance, the dummy client with Owner "ipvskit:<instance>".
	Instance string
	// KubeProxyNames uses kube-proxy's names (link kube-ipvs0; the back
	// ends' KUBE-* chains and ipsets, or table kube-proxy), an explicit
	// opt-in for taking over a kube-proxy node. Ownership still goes by the
	// instance's mark: objects kube-proxy made are adopted only with
	// AdoptKubeProxy.
	KubeProxyNames bool
	// AdoptKubeProxy, with KubeProxyNames, takes over a node that
	// kube-proxy's IPVS mode configured and no longer runs on, without a
	// blip in VIPAddresses (see VIPMode for VIPLocalRoutes): the first Sync marks kube-proxy's kube-ipvs0 as the link
	// client's and takes as its own, besides what its ledger holds, the
	// VIPs bound on it, every virtual server at a key the State wants and
	// every one on such a VIP or on one in kube-proxy's KUBE-IPVS-IPS set
	// (which the adopting back end reads as the ledger's VIPs); those it
	// wants are updated in place
	// (nothing deleted and made again), the others deleted, as kube-proxy
	// would. Give the iptables back end AdoptKubeProxy too, so it takes
	// kube-proxy's chains and ipsets; the link client must have Adopt
	// (*dummy.Client does). After the first successful Sync the marks decide
	// as usual. docs/takeover.md walks through a takeover and the way back.
	AdoptKubeProxy bool
	// LinkName is the dummy link that holds the VIPs; empty means
	// "<instance>0" ("ipvskit0"), or "kube-ipvs0" with KubeProxyNames
	// (which only KubeProxyNames may name). A link of that name that the
	// Proxier did not create (the dummy client's mark) is never used,
	// changed or deleted: the first Sync fails instead.
	LinkName string
	// Backend chooses how netfilter rules are written, for a Proxier made
	// by Open: NFTables (the zero value) opens iptables.NewNFTables for
	// each family, IPTables opens iptables.NewIPTables (its flavor, legacy
	// or nft, picked by iptables.FlavorAuto). A Proxier made by New writes
	// through the back ends in Deps.Rules, whatever Backend says.
	Backend Backend
	// MasqueradeAll masquerades every packet to a cluster IP, not just
	// those the local-traffic detector says come from outside, as
	// kube-proxy's masqueradeAll. Packets to node ports, external IPs and
	// load-balancer IPs are masqueraded as without it: unless the Service's
	// external traffic policy is Local.
	MasqueradeAll bool
	// LocalDetector says which sources are "local" (pods): traffic from
	// elsewhere to a cluster IP is masqueraded. Zero detects nothing: a
	// packet to a cluster IP is then masqueraded only when its source is
	// itself a cluster IP (the node talking from a VIP), by the hairpin
	// rule, or with MasqueradeAll. It does not change how packets to node
	// ports, external IPs and load-balancer IPs are masqueraded.
	LocalDetector LocalDetector
	// MasqueradeBit is the bit of the packet mark that asks for masquerade,
	// 0-31; nil means 14 (mark 0x4000), as kube-proxy.
	MasqueradeBit *int
	// VIPMode says how the VIPs are made the node's own: VIPAddresses (the
	// zero value, the default) binds each as an address on the VIP link,
	// VIPLocalRoutes adds a local route for each instead (marked with
	// protocol dummy.RouteProtocol, out of the VIP link; Deps.Link must
	// have Routes and UpdateRoutes, as *dummy.Client has).
	//
	// The trade-off: binding IPv4 addresses costs the kernel O(n^2) (each
	// walks the link's address list; 20,000 took 36.7 s with ip(8) where
	// 20,000 routes took 2.2 s), so VIPLocalRoutes is for many VIPs.
	// Traffic to the VIPs, ARP (with or without StrictARP), the IPVSIPs
	// set and the access guard behave alike in both. With local routes,
	// `ip addr` shows no VIP; a program on the node cannot bind() to an
	// IPv6 VIP (IPv4 it can), and its own IPv6 connections to a VIP come
	// from another of the node's addresses; the kernel never picks a VIP
	// as a source address; and the VIP link is set up once an IPv6 VIP is
	// held (the kernel takes no IPv6 route on a down link). A Proxier
	// started in the other mode than the last run adds each VIP in its
	// form before it removes the old one; from addresses to routes (and
	// AdoptKubeProxy in route mode) the IPv4 VIPs still lack a route for
	// one netlink round trip, as the kernel flushes a link's IPv4 routes
	// when it loses its last IPv4 address and the Proxier adds them back.
	// docs/vip-modes.md has the details.
	VIPMode VIPMode
	// StrictARP sets arp_ignore=1 and arp_announce=2 so the node does not
	// answer ARP for the VIPs on its other links.
	StrictARP bool
	// Families are the IP families served; empty means IPv4 only.
	Families []Family
	// Observer, if set, receives an event for every Sync (and Drain and
	// Reconcile): durations per phase, operations and errors per
	// subsystem. See Observer.
	Observer Observer
	// Logger, if set, gets a line per Sync (Debug when nothing changed,
	// Info when something did, Warn on failure), per repair, and per
	// Warning when a sync first finds it. The proxier logs nothing
	// otherwise.
	Logger *slog.Logger
	// MaxDrain bounds how long a destination that left a TCP virtual
	// server drains (weight 0; its connections carry on) before Drain
	// deletes it with its connections open (kubernetes#89392: unbounded,
	// one long-lived connection keeps it forever). 0 means
	// DefaultMaxDrain; negative is invalid. There is no unbounded setting.
	MaxDrain time.Duration
	// ExcludeCIDRs are address space that is another program's (kube-proxy's
	// --ipvs-exclude-cidrs, ipvs.excludeCIDRs): a virtual server whose
	// address lies in one is never the Proxier's, even if its ledger
	// lists it (an earlier run's), it sits on a VIP bound to the VIP link,
	// or AdoptKubeProxy would take it: Sync, Reconcile and Cleanup never
	// change or delete it, nor its destinations. The same holds for the
	// addresses and VIP routes on the VIP link inside them: never unbound,
	// and Cleanup keeps the link while it holds one (unbinding only the
	// Proxier's own VIPs). A State may not put a cluster, external or
	// load-balancer IP inside one (a *ValidationError names it and the
	// prefix): a virtual server the Proxier can never remove is not made.
	// Node addresses inside one get no node-port virtual servers, as if
	// Node.NodePortCIDRs left them out. Each must be a valid prefix without
	// host bits; nil excludes nothing.
	ExcludeCIDRs []netip.Prefix
	// SyncDaemons are the IPVS connection-sync daemons the Proxier runs,
	// for failover between two load balancers (docs/failover.md): at most
	// one Master (sends this node's connections) and one Backup (takes the
	// peer's in), as the kernel allows per namespace. Each names its
	// Interface (1-15 bytes, required), a SyncID of 0-255 (a backup with 0
	// takes every master's), and optionally MaxLen (a master 1-1472, a
	// backup 1024-1472; 1452 with an IPv6 group; 0 is the kernel's choice),
	// a multicast Group (default 224.0.0.81), Port (8848) and TTL (1).
	// The first Sync starts them (last, after the services), adopting one
	// already running with exactly these parameters; one running in a
	// configured role with other parameters that the Proxier did not start
	// is someone else's, and the Sync fails with a *DaemonConflictError
	// before applying anything. Reconcile restarts a daemon that stopped
	// and replaces one whose parameters changed (drift); Cleanup stops
	// them. A role not listed is never touched. Deps.IPVS must be a
	// DaemonClient (*ipvs.Client is). Nil runs none.
	SyncDaemons []SyncDaemon
}

// Backend is a netfilter back end.
type Backend uint8

const (
	// NFTables writes one nftables table per family (the default).
	NFTables Backend = iota
	// IPTables writes iptables chains over ipsets.
	IPTables
)

func (b Backend) String() string {
	switch b {
	case NFTables:
		return "nftables"
	case IPTables:
		return "iptables"
	}
	return "Backend(" + itoa(int(b)) + ")"
}

// Family is an IP family (inet.Family, as every ipvskit package has it).
type Family = inet.Family

// The families.
const (
	IPv4 = inet.IPv4
	IPv6 = inet.IPv6
)

// LocalDetector tells local (pod) traffic from the rest: by source prefixes
// (the cluster CIDRs), by input interface name, or by interface name prefix.
// At most one of its fields may be set.
type LocalDetector struct {
	ClusterCIDRs    []netip.Prefix
	Interface       string
	InterfacePrefix string
}

// VIPMode is how the Proxier makes a VIP the node's own, so that the
// kernel delivers packets to it locally, where IPVS takes them.
type VIPMode uint8

const (
	// VIPAddresses binds each VIP as a host address (/32 or /128) on the
	// VIP link, as kube-proxy does on kube-ipvs0 (the default).
	VIPAddresses VIPMode = iota
	// VIPLocalRoutes adds, for each VIP, a route of type local in the local
	// table on the VIP link, marked with protocol dummy.RouteProtocol, and
	// binds no address. See Config.VIPMode for the trade-offs.
	VIPLocalRoutes
)

func (m VIPMode) String() string {
	switch m {
	case VIPAddresses:
		return "addresses"
	case VIPLocalRoutes:
		return "local-routes"
	}
	return "VIPMode(" + itoa(int(m)) + ")"
}
