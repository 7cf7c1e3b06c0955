package agent

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/ipvskit/ipvskit/kube/convert"
	"github.com/ipvskit/ipvskit/proxier"
)

// LabelZone is the Node label zone hints are matched against.
const LabelZone = "topology.kubernetes.io/zone"

// proxierConfig completes Options.Proxier with what the KubeProxy
// configuration and the Node decide.
func (a *Agent) proxierConfig(node *corev1.Node) (*proxier.Config, error) {
	c := a.o.Config
	cfg := a.o.Proxier
	cfg.MasqueradeAll = c.MasqueradeAll
	bit := c.MasqueradeBit
	cfg.MasqueradeBit = &bit
	cfg.StrictARP = c.StrictARP
	cfg.ExcludeCIDRs = c.ExcludeCIDRs
	if cfg.Logger == nil {
		cfg.Logger = a.log
	}
	switch c.DetectLocalMode {
	case DetectClusterCIDR:
		cfg.LocalDetector.ClusterCIDRs = c.ClusterCIDRs
	case DetectNodeCIDR:
		cidrs := node.Spec.PodCIDRs
		if len(cidrs) == 0 && node.Spec.PodCIDR != "" {
			cidrs = []string{node.Spec.PodCIDR}
		}
		for _, s := range cidrs {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("agent: Node %s: spec.podCIDRs: %q: %w", node.Name, s, err)
			}
			cfg.LocalDetector.ClusterCIDRs = append(cfg.LocalDetector.ClusterCIDRs, p.Masked())
		}
	case DetectBridgeInterface:
		cfg.LocalDetector.Interface = c.BridgeInterface
	case DetectInterfaceNamePrefix:
		cfg.LocalDetector.InterfacePrefix = c.InterfaceNamePrefix
	}
	// A family's detector needs a CIDR of that family; kube-proxy's IPVS
	// mode runs without one (no detection) and so does the Proxier.
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return &cfg, nil
}

// nodeAddresses are the addresses node ports are served on: the node's
// own, or with nodePortAddresses "primary" its Node's first InternalIP of
// each family (that it has).
func (a *Agent) nodeAddresses(node *corev1.Node) ([]netip.Addr, error) {
	var addrs []netip.Addr
	if a.o.NodeAddresses != nil {
		var err error
		if addrs, err = a.o.NodeAddresses(); err != nil {
			return nil, fmt.Errorf("agent: reading the node's addresses: %w", err)
		}
	}
	if !a.o.Config.NodePortPrimaryOnly {
		return addrs, nil
	}
	primary := PrimaryIPs(node)
	return slices.DeleteFunc(addrs, func(a netip.Addr) bool { return !slices.Contains(primary, a) }), nil
}

// healthCheckAddresses are the addresses the health-check node ports
// listen on: those of the node's within nodePortAddresses, or (nil) all
// addresses when it is unset, as kube-proxy.
func (a *Agent) healthCheckAddresses(node *corev1.Node) ([]netip.Addr, error) {
	c := a.o.Config
	if len(c.NodePortAddresses) == 0 && !c.NodePortPrimaryOnly {
		return nil, nil
	}
	addrs, err := a.nodeAddresses(node)
	if err != nil {
		return nil, err
	}
	if c.NodePortPrimaryOnly {
		return addrs, nil
	}
	return slices.DeleteFunc(addrs, func(x netip.Addr) bool {
		return !slices.ContainsFunc(c.NodePortAddresses, func(p netip.Prefix) bool { return p.Contains(x) })
	}), nil
}

// PrimaryIPs are a Node's first InternalIP of each family (or, without
// one, its first ExternalIP), as kube-proxy picks its node IPs.
func PrimaryIPs(n *corev1.Node) []netip.Addr {
	if n == nil {
		return nil
	}
	var out []netip.Addr
	has := func(v6 bool) bool {
		return slices.ContainsFunc(out, func(a netip.Addr) bool { return a.Is6() == v6 })
	}
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP} {
		for _, na := range n.Status.Addresses {
			if na.Type != t {
				continue
			}
			ip, err := netip.ParseAddr(na.Address)
			if err != nil || has(ip.Is6()) {
				continue
			}
			out = append(out, ip.Unmap())
		}
	}
	return out
}

// convertNode is what the converter knows of the node now: its name, the
// addresses node ports are served on, the node-port CIDRs, the families
// and the Node's zone. A change of it makes the next sync whole.
func (a *Agent) convertNode() (convert.Node, error) {
	node := a.src.currentNode()
	addrs, err := a.nodeAddresses(node)
	if err != nil {
		return convert.Node{}, err
	}
	n := convert.Node{Name: a.o.NodeName, Addresses: addrs, NodePortCIDRs: a.o.Config.NodePortAddresses,
		Families: a.o.Proxier.Families}
	if node != nil {
		n.Zone = node.Labels[LabelZone]
	}
	return n, nil
}

func sameNode(a, b convert.Node) bool {
	return a.Name == b.Name && a.Zone == b.Zone && slices.Equal(a.Addresses, b.Addresses) &&
		slices.Equal(a.NodePortCIDRs, b.NodePortCIDRs) && slices.Equal(a.Families, b.Families)
}
