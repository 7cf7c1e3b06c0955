package iptables

import (
	"fmt"
	"strings"
)

// SetName names one of the proxy's sets. Each is an ipset for the iptables
// back end (named after its instance, e.g. IPVSKIT-CLUSTER-IP, or
// kube-proxy's KUBE-CLUSTER-IP with KubeProxyNames) and an nft set of the
// same contents for the nftables back end (e.g. cluster-ip).
type SetName uint8

// The sets of kube-proxy's IPVS mode, plus LBNoNodeAccess, which kube-proxy
// renders as one rule per member in KUBE-IPVS-OUT-FILTER. ClusterIPSet and
// ExternalIPSet carry the suffix that the proxier's frontend kinds
// (proxier.ClusterIP, proxier.ExternalIP) do not, so the two never read alike.
const (
	// ClusterIPSet: cluster IP, protocol, port of every service port.
	ClusterIPSet SetName = iota + 1
	// LoopBack: endpoint IP, protocol, port, endpoint IP again, for every
	// endpoint on this node (hairpin masquerade).
	LoopBack
	// ExternalIPSet / ExternalIPLocal: external IP, protocol, port of services
	// whose external traffic policy is Cluster / Local.
	ExternalIPSet
	ExternalIPLocal
	// LoadBalancer: load-balancer IP, protocol, port of every ingress VIP.
	LoadBalancer
	// LoadBalancerLocal: those of services with the Local traffic policy.
	LoadBalancerLocal
	// LoadBalancerFW: those of services that have source ranges.
	LoadBalancerFW
	// LoadBalancerSourceIP: LB IP, protocol, port, LB IP again, when a
	// source range contains the node's IP (the node reaching its own VIP).
	LoadBalancerSourceIP
	// LoadBalancerSourceCIDR: LB IP, protocol, port, allowed source network.
	LoadBalancerSourceCIDR
	// NodePortTCP, NodePortUDP: node ports; the Local variants hold those of
	// services with the Local traffic policy.
	NodePortTCP
	NodePortLocalTCP
	NodePortUDP
	NodePortLocalUDP
	// NodePortSCTP, NodePortLocalSCTP: node IP, sctp, node port.
	NodePortSCTP
	NodePortLocalSCTP
	// HealthCheckNodePort: health-check node ports.
	HealthCheckNodePort
	// IPVSIPs: the addresses bound to the VIP link.
	IPVSIPs
	// LBNoNodeAccess: LB IP, protocol, port of load balancers whose source
	// ranges do not admit the node: node-originated traffic to them is
	// dropped (KUBE-IPVS-OUT-FILTER, kubernetes#119656).
	LBNoNodeAccess
	// VirtualServers: address, protocol, port of every IPVS virtual server
	// the proxier owns. No rule reads it: it is the ownership ledger, in the
	// kernel beside the rules, written before a virtual server is created
	// and trimmed after it is deleted, so a restarted proxier knows which
	// virtual servers are its own (see the proxier's package doc).
	VirtualServers

	numSets = int(VirtualServers)
)

// setDef describes a set: its shape, kube-proxy's ipset name and comment,
// the nft set name and the suffix of an instance's ipset name.
type setDef struct {
	shape   Shape
	ipset   string // IPv4 ipset name; "" if not an ipset
	nft     string
	comment string
	// suffix follows an instance's prefix in its ipset's name
	// (IPVSKIT-CLUSTER-IP, IPVSKIT-6-CLUSTER-IP): at most 16 bytes, so that
	// a 12-byte instance's IPv6 name fits the kernel's 31.
	suffix string
}

var setDefs = [numSets + 1]setDef{
	ClusterIPSet:           {ShapeAddrPort, "KUBE-CLUSTER-IP", "cluster-ip", "Kubernetes service cluster ip + port for masquerade purpose", "CLUSTER-IP"},
	LoopBack:               {ShapeAddrPortAddr, "KUBE-LOOP-BACK", "loop-back", "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose", "LOOP-BACK"},
	ExternalIPSet:          {ShapeAddrPort, "KUBE-EXTERNAL-IP", "external-ip", "Kubernetes service external ip + port for masquerade and filter purpose", "EXTERNAL-IP"},
	ExternalIPLocal:        {ShapeAddrPort, "KUBE-EXTERNAL-IP-LOCAL", "external-ip-local", "Kubernetes service external ip + port with externalTrafficPolicy=local", "EXTERNAL-LOCAL"},
	LoadBalancer:           {ShapeAddrPort, "KUBE-LOAD-BALANCER", "load-balancer", "Kubernetes service lb portal", "LOAD-BALANCER"},
	LoadBalancerLocal:      {ShapeAddrPort, "KUBE-LOAD-BALANCER-LOCAL", "load-balancer-local", "Kubernetes service load balancer ip + port with externalTrafficPolicy=local", "LB-LOCAL"},
	LoadBalancerFW:         {ShapeAddrPort, "KUBE-LOAD-BALANCER-FW", "load-balancer-fw", "Kubernetes service load balancer ip + port for load balancer with sourceRange", "LB-FW"},
	LoadBalancerSourceIP:   {ShapeAddrPortAddr, "KUBE-LOAD-BALANCER-SOURCE-IP", "load-balancer-source-ip", "Kubernetes service load balancer ip + port + source IP for packet filter purpose", "LB-SOURCE-IP"},
	LoadBalancerSourceCIDR: {ShapeAddrPortNet, "KUBE-LOAD-BALANCER-SOURCE-CIDR", "load-balancer-source-cidr", "Kubernetes service load balancer ip + port + source cidr for packet filter purpose", "LB-SOURCE-CIDR"},
	NodePortTCP:            {ShapePort, "KUBE-NODE-PORT-TCP", "node-port-tcp", "Kubernetes nodeport TCP port for masquerade purpose", "NODE-PORT-TCP"},
	NodePortLocalTCP:       {ShapePort, "KUBE-NODE-PORT-LOCAL-TCP", "node-port-local-tcp", "Kubernetes nodeport TCP port with externalTrafficPolicy=local", "NP-LOCAL-TCP"},
	NodePortUDP:            {ShapePort, "KUBE-NODE-PORT-UDP", "node-port-udp", "Kubernetes nodeport UDP port for masquerade purpose", "NODE-PORT-UDP"},
	NodePortLocalUDP:       {ShapePort, "KUBE-NODE-PORT-LOCAL-UDP", "node-port-local-udp", "Kubernetes nodeport UDP port with externalTrafficPolicy=local", "NP-LOCAL-UDP"},
	NodePortSCTP:           {ShapeAddrPort, "KUBE-NODE-PORT-SCTP-HASH", "node-port-sctp", "Kubernetes nodeport SCTP port for masquerade purpose with type 'hash ip:port'", "NODE-PORT-SCTP"},
	NodePortLocalSCTP:      {ShapeAddrPort, "KUBE-NODE-PORT-LOCAL-SCTP-HASH", "node-port-local-sctp", "Kubernetes nodeport SCTP port with externalTrafficPolicy=local with type 'hash ip:port'", "NP-LOCAL-SCTP"},
	HealthCheckNodePort:    {ShapePort, "KUBE-HEALTH-CHECK-NODE-PORT", "health-check-node-port", "Kubernetes health check node port", "HEALTH-CHECK"},
	IPVSIPs:                {ShapeAddr, "KUBE-IPVS-IPS", "ipvs-ips", "Addresses on the ipvs interface", "IPVS-IPS"},
	LBNoNodeAccess:         {ShapeAddrPort, "", "lb-no-node-access", "Kubernetes service load balancer ip + port the node may not reach", ""},
	VirtualServers:         {ShapeAddrPort, "KUBE-VIRTUAL-SERVERS", "virtual-servers", "ipvskit's IPVS virtual servers (ownership ledger)", "VIRTUAL-SERVERS"},
}

// Sets returns every SetName, in a fixed order.
func Sets() []SetName {
	out := make([]SetName, numSets)
	for i := range out {
		out[i] = SetName(i + 1)
	}
	return out
}

func (s SetName) valid() bool { return s >= 1 && int(s) <= numSets }

// String returns the nft name of the set, e.g. "cluster-ip".
func (s SetName) String() string {
	if !s.valid() {
		return fmt.Sprintf("SetName(%d)", uint8(s))
	}
	return setDefs[s].nft
}

// Shape returns the shape of the set's members.
func (s SetName) Shape() Shape {
	if !s.valid() {
		return 0
	}
	return setDefs[s].shape
}

// IPSetName returns the name of the ipset that holds the set for family f
// as kube-proxy names it, which is the iptables back end's name with
// IPTablesConfig.KubeProxyNames (IPv6 sets start "KUBE-6-" and are cut to 31
// bytes), or "" for LBNoNodeAccess, which is not an ipset.
func (s SetName) IPSetName(f Family) string {
	if !s.valid() || setDefs[s].ipset == "" {
		return ""
	}
	n := setDefs[s].ipset
	if f == IPv6 {
		n = strings.Replace(n, "KUBE-", "KUBE-6-", 1)
		if len(n) > 31 {
			n = n[:31]
		}
	}
	return n
}

// isIPSet reports whether the iptables back end keeps s as an ipset.
func (s SetName) isIPSet() bool { return s.valid() && setDefs[s].ipset != "" }

// comment returns kube-proxy's comment for the set.
func (s SetName) comment() string { return setDefs[s].comment }
