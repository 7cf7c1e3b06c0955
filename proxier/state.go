package proxier

import (
	"net/netip"
	"strings"
	"time"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/ipvs"
)

// State is the desired state a caller hands to the Proxier: every service the
// node (or namespace) should serve, with its endpoints, and the node's facts.
// It has no Kubernetes types; a Kubernetes controller maps Services and
// EndpointSlices onto it, and so can anything else.
//
// A State is applied all or nothing: one invalid value (a loopback external
// IP, say) refuses the whole Sync, with every problem listed, and nothing is
// changed. That is deliberate for a library call, which must not half-apply
// what its caller asked for; kube-proxy instead programs what it can of each
// Service. A translator that must serve the rest when one object is bad
// drops that object before it calls Sync and reports it, as the Kubernetes
// converter (kube/convert) does with its Skipped list.
type State struct {
	// Services by ID. The ID is the caller's name for the service
	// ("default/web"); it appears in error paths and plans.
	Services map[string]Service
	// Node is what the proxier needs to know about the node itself.
	Node Node
}

// Node holds the node's own facts.
type Node struct {
	// Addresses are the node's addresses. NodePort virtual servers are made
	// on each of them (or on those NodePortCIDRs select), in each family a
	// service is served in, except on loopback addresses (127.0.0.0/8, ::1)
	// and IPv6 link-local ones (fe80::/10), which are left out: an IPv6
	// link-local address is only meaningful with its interface, which a
	// virtual server cannot name. IPv4 link-local addresses (169.254.0.0/16)
	// do get node ports, as kube-proxy gives them.
	//
	// An external or load-balancer IP may equal one of the addresses: the
	// node holds it already, so its virtual servers serve it (beside the
	// node ports on it), and the Proxier neither binds it on the VIP link
	// nor routes it (in either VIPMode), nor puts it in the IPVSIPs set,
	// whose filter rule refuses new connections to the set's addresses at
	// every port no service serves. The address is not the Proxier's: never
	// bound, unbound or counted as a VIP, not drift in Reconcile, and
	// Cleanup leaves it where the node has it. kube-proxy (v1.37) serves
	// such an IP the same way; binding it, as kube-proxy once did, cut the
	// node off (kubernetes#93175). On other nodes, where the IP is not an
	// address of their own, it is a VIP like any other, bound there by
	// both. While adopting (Config.AdoptKubeProxy), a copy of a node
	// address on kube-ipvs0 (an older kube-proxy bound them) is removed
	// with the link's other unwanted addresses, as kube-proxy's own sync
	// would remove it; the node's address on its own link keeps its
	// routes (docs/takeover.md). A frontend on such an address at the port
	// of a node port or health-check node port of the same protocol is
	// refused, whether or not the address carries node ports: where it
	// does, the two would be one virtual server (and a health check's
	// server may listen on every address).
	//
	// A cluster IP may not equal one of the addresses: a cluster IP is
	// always bound and in IPVSIPs, whose rule would refuse the node's own
	// services on that address (Kubernetes never allocates one from a
	// node's addresses). List every address the node holds outside the
	// VIP link that an external or load-balancer IP may be, not only
	// those that carry node ports (NodePortCIDRs chooses those): an IP
	// missing here is bound on the VIP link as a VIP.
	Addresses []netip.Addr
	// NodePortCIDRs, if set, choose which of Addresses get NodePort virtual
	// servers; empty means all of them.
	NodePortCIDRs []netip.Prefix
}

// Service is one service: its virtual IPs, ports, policies and endpoints.
type Service struct {
	// ClusterIPs are the service's cluster IPs, at most one per family. Empty
	// makes a service without a cluster IP (headless-like): it can still
	// have external IPs, load-balancer IPs and node ports.
	ClusterIPs []netip.Addr
	// IPFamilies are the families the service is served in, in any order
	// (Kubernetes' spec.ipFamilies): node ports and the health-check port
	// are served in these families only, and every cluster, external and
	// load-balancer IP must be of one of them. Empty means the families of
	// ClusterIPs or, for a service without cluster IPs, every family the
	// Config enables. Each must be enabled by the Config, and listed once.
	IPFamilies []Family
	// Ports lists the service's ports; at least one. Names must be unique
	// within the service (they match endpoint ports); one unnamed port is
	// allowed when it is the only one.
	Ports []Port
	// FirewallMark, if not 0, makes the service a firewall-mark service
	// (ipvsadm -f, keepalived's virtual_server fwmark): one IPVS virtual
	// server per family of its VIPs, keyed by the mark, takes every packet
	// that reaches a VIP carrying exactly this mark, whatever its port and
	// protocol, so one client's connections to several ports (http and
	// https) share the SessionAffinity. Its endpoints are destinations at
	// port 0: each packet keeps its port. The VIPs (cluster, external and
	// load-balancer IPs) are bound and let in at Ports as usual; marking
	// the packets is the caller's, in mangle PREROUTING and OUTPUT (see
	// docs/packet-flow.md, "Firewall-mark services"). Its traffic is
	// never marked for masquerade (IPVS matches the packet's whole mark),
	// so the endpoints must route replies through the node. Validation
	// refuses a mark that has the masquerade bit (Config.MasqueradeBit),
	// node ports, a health-check node port, Local traffic policies,
	// load-balancer source ranges, a target port other than the port,
	// endpoint ports, a service without a VIP, and two services with one
	// mark in one family. Destinations that go drain as TCP ones do.
	FirewallMark uint32
	// ExternalIPs are further VIPs served like the cluster IP, with the
	// external traffic policy. Like every VIP, one that is not usable
	// (loopback such as 127.0.0.1, link-local, multicast, unspecified) is
	// refused, which refuses the State (kube-proxy programs a loopback
	// external IP; the Kubernetes converter leaves it out and reports it).
	// One that is a node address is served without being bound (see
	// Node.Addresses).
	ExternalIPs []netip.Addr
	// LoadBalancerIPs are load-balancer ingress IPs served on this node,
	// with the external traffic policy; like ExternalIPs, one that is a
	// node address is served without being bound.
	LoadBalancerIPs []netip.Addr
	// LoadBalancerSourceRanges, if set, are the only client prefixes the
	// load-balancer IPs accept; others are dropped.
	LoadBalancerSourceRanges []netip.Prefix
	// SessionAffinity, if set, sends each client to the same endpoint for
	// the given time after its last connection (IPVS persistence).
	SessionAffinity *SessionAffinity
	// ExternalTrafficPolicy applies to external IPs, load-balancer IPs and
	// node ports; InternalTrafficPolicy to cluster IPs. Zero is Cluster.
	// Local with no local endpoint gives those virtual servers no
	// destinations, so clients are refused at once: Kubernetes' meaning of
	// both policies, which kube-proxy's iptables and nftables modes keep
	// (they drop). kube-proxy's IPVS mode instead gives them every cluster
	// endpoint (kubernetes#97081): under the external policy always (an
	// outside client then discards the replies, which come back from
	// another node); under the internal policy for a port that also has a
	// node port, or of a service with external or load-balancer IPs.
	// Taking over a kube-proxy node removes those destinations, and its
	// preview reports it (docs/kube-proxy-differences.md,
	// docs/takeover.md).
	ExternalTrafficPolicy TrafficPolicy
	InternalTrafficPolicy TrafficPolicy
	// Scheduler is the IPVS scheduler ("rr", "wrr", "lc", "mh", ...); empty
	// means "rr". SchedulerFlags are its flags (e.g. ipvs.MHFallback).
	Scheduler      string
	SchedulerFlags ipvs.SchedFlags
	// OnePacket schedules each UDP datagram on its own (IPVS one-packet
	// scheduling, ipvsadm -o, keepalived's ops): no connection entry is
	// kept, so datagrams of one client flow may go to different
	// endpoints. It is set on the service's UDP virtual servers only (its
	// TCP and SCTP ones are unchanged), and refused on a service without
	// a UDP port, where it would say nothing.
	OnePacket bool
	// HealthCheckNodePort is the node port of the service's health check;
	// 0 means none. Only a service whose ExternalTrafficPolicy is Local may
	// have one (validation refuses it with Cluster, where a health check
	// has nothing to say; Kubernetes' API server refuses it too). It is
	// opened in each family the service is served in (IPFamilies), whether
	// or not the node has addresses of that family or the service node
	// ports. The proxier lets its traffic in (kube-proxy's
	// KUBE-HEALTH-CHECK-NODE-PORT entry, which matters where the node's
	// input policy drops) and reserves the port against node ports;
	// answering it, with how many local endpoints are ready, is the
	// caller's HTTP server, as it is kube-proxy's.
	HealthCheckNodePort int
	// Forward is how IPVS sends packets to the service's endpoints: Masq
	// (the zero value, today's behaviour), DirectRoute or Tunnel; Tunnel
	// says which tunnel for Forward Tunnel. What each needs of the node
	// and of the backends is in ForwardMethod's doc and
	// docs/packet-flow.md; validation refuses what a method cannot do.
	Forward ForwardMethod
	Tunnel  Tunnel
	// Endpoints are the service's backends. An endpoint that goes (or stops
	// being chosen) keeps its TCP destinations at weight 0, so their open
	// connections finish, until Proxier.Drain deletes them once idle or
	// past Config.MaxDrain: a Sync never deletes a TCP destination, even an
	// idle one (kube-proxy's graceful termination does that work on its own
	// timer; call Drain on yours). UDP and SCTP destinations go at once,
	// with their conntrack flows.
	Endpoints []Endpoint
}

// Port is one port of a service. Port numbers are ints so that a bad value
// can be named in an error rather than silently truncated.
type Port struct {
	// Name is a DNS label (at most 63 of a-z, 0-9 and '-', a letter or
	// digit at each end), as Kubernetes requires; empty for a service's
	// only port.
	Name     string
	Protocol Protocol
	// Port is the port on the VIPs (1-65535).
	Port int
	// TargetPort is the endpoints' port when an endpoint does not name one
	// for this port; 0 means the same as Port.
	TargetPort int
	// NodePort, if not 0, serves this port on the node's addresses too
	// (1-65535): those of the service's families (Service.IPFamilies), as
	// kube-proxy serves a single-stack Service's node port only in its
	// family.
	NodePort int
}

// Endpoint is one backend of a service.
type Endpoint struct {
	Addr netip.Addr
	// Ports maps a service port's Name to this endpoint's port for it; a
	// port not listed uses the service port's TargetPort.
	Ports map[string]int
	// Conditions, as Kubernetes defines them: a Ready endpoint takes new
	// traffic; a Serving and Terminating one is used only when a service has
	// no Ready endpoints.
	Ready, Serving, Terminating bool
	// Local says the endpoint runs on this node (for Local policies).
	Local bool
	// Weight is the endpoint's share of new connections, relative to the
	// other endpoints of its service, for the weighted schedulers (wrr,
	// wlc, sed, nq, mh, ...): 1-65535 (MaxWeight, what ipvsadm can write
	// and restore). The zero value means 1, every endpoint's weight before
	// weights existed, so an Endpoint built without it is served as it
	// always was. Weight 0 cannot be asked for here: set Quiesced instead.
	// A serving and terminating endpoint chosen as kube-proxy's fallback
	// (no endpoint is Ready) keeps its Weight.
	Weight int
	// Quiesced gives the endpoint weight 0: its destinations stay in the
	// kernel and keep their established connections, but get no new ones
	// (ipvsadm -w 0; keepalived's weight 0 or inhibit_on_failure). It
	// stays until the State says otherwise, unlike an endpoint that
	// leaves the State (or stops being chosen), whose TCP destinations
	// drain: also at weight 0, but deleted by Proxier.Drain once idle.
	// Validation refuses Quiesced with a Weight other than 0. A quiesced
	// endpoint is still chosen (Ready, or kube-proxy's fallback) like any
	// other, so it keeps a service from falling back to its terminating
	// endpoints.
	Quiesced bool
	// UpperThreshold, if not 0, is the most connections (active and
	// inactive) the endpoint's destinations take: above it a destination
	// gets no new connections (ipvsadm -x, keepalived's uthreshold).
	// LowerThreshold, if not 0, is where an overloaded destination takes
	// new connections again (ipvsadm -y, keepalived's lthreshold); 0 means
	// the kernel's default, three quarters of UpperThreshold. Each is
	// 0-2147483647 (MaxThreshold); a LowerThreshold needs an
	// UpperThreshold at least as high (the kernel refuses a lower
	// threshold above the upper one, and no upper threshold is 0).
	UpperThreshold, LowerThreshold int
}

// MaxWeight is the highest Endpoint.Weight: ipvsadm's limit, so that every
// weight the Proxier writes can be saved and restored with ipvsadm.
const MaxWeight = 65535

// MaxThreshold is the highest Endpoint.UpperThreshold and LowerThreshold:
// ipvsadm's limit (the kernel's field is unsigned 32-bit).
const MaxThreshold = 1<<31 - 1

// SessionAffinity sends a client to the same endpoint while it keeps coming
// back within Timeout.
type SessionAffinity struct {
	// Timeout is how long affinity lasts after a client's last connection;
	// 0 means the default, 10800 s (3 h). Whole seconds, at most 86400.
	Timeout time.Duration
	// IPv4PrefixLen and IPv6PrefixLen group clients for affinity by
	// network (IPVS persistence netmask, ipvsadm -M, keepalived's
	// persistence_granularity): clients whose addresses share their first
	// bits go to the same endpoint. 0 means the whole address (32 or 128:
	// each client on its own), as does the whole length itself; 0-32 and
	// 0-128. Each applies to the virtual servers of its family.
	IPv4PrefixLen, IPv6PrefixLen int
}

// DefaultAffinityTimeout is the session affinity timeout when none is given.
const DefaultAffinityTimeout = 10800 * time.Second

// MaxAffinityTimeout is the longest session affinity timeout accepted, as in
// Kubernetes.
const MaxAffinityTimeout = 86400 * time.Second

// Protocol is a service port's transport protocol: inet.Protocol, the type
// every ipvskit package takes (ipvs, iptables, conntrack), so a port's
// protocol goes to them as it is. The State's files write it as Kubernetes
// does, upper case ("TCP"), and read it in any case; its String is the
// kernel tools' name, lower case ("tcp"). Validation takes TCP, UDP and
// SCTP only.
type Protocol = inet.Protocol

// The protocols IPVS balances.
const (
	TCP  = inet.TCP
	UDP  = inet.UDP
	SCTP = inet.SCTP
)

// protocolName is p as the State's files and the Proxier's messages write
// it: "TCP", "UDP" or "SCTP", upper case as in Kubernetes; any other
// protocol as its String.
func protocolName(p Protocol) string {
	switch p {
	case TCP:
		return "TCP"
	case UDP:
		return "UDP"
	case SCTP:
		return "SCTP"
	}
	return p.String()
}

// protocolNamed is the protocol a State's file names, in any case: "tcp"
// and "TCP" are TCP. A name that is not TCP, UDP or SCTP gives 0.
func protocolNamed(name string) Protocol {
	for _, p := range [...]Protocol{TCP, UDP, SCTP} {
		if strings.EqualFold(name, protocolName(p)) {
			return p
		}
	}
	return 0
}

// TrafficPolicy says which endpoints a VIP uses.
type TrafficPolicy uint8

const (
	// Cluster uses every chosen endpoint (the default).
	Cluster TrafficPolicy = iota
	// Local uses only endpoints on this node; for external traffic it keeps
	// the client's source address.
	Local
)

func (p TrafficPolicy) String() string {
	switch p {
	case Cluster:
		return "Cluster"
	case Local:
		return "Local"
	}
	return "TrafficPolicy(" + itoa(int(p)) + ")"
}
