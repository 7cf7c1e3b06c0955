package kubeproxybench

import (
	"errors"

	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/sysctl"
)

// IPVSKit is ipvskit's proxier in a node namespace, configured like
// kube-proxy: kube-proxy's names, and either the iptables back end (ipsets
// and iptables-restore of iptables-nft, as kube-proxy on Debian runs
// "iptables") or ipvskit's default nftables one.
type IPVSKit struct {
	P       *proxier.Proxier
	closers []func() error
}

// NewIPVSKit opens the real clients in node. It wires them by hand rather
// than with proxier.Open, which would pick the iptables flavor itself and add
// a conntrack client (stale-flow deletes in every UDP change): a benchmark
// pins what it measures, and the runs in docs/benchmarks.md had neither.
func NewIPVSKit(node *Node, backend proxier.Backend) (*IPVSKit, error) {
	h := node.Handle()
	k := &IPVSKit{}
	ic, err := ipvs.New(&ipvs.Config{NetNS: h})
	if err != nil {
		return nil, err
	}
	k.closers = append(k.closers, ic.Close)
	lc, err := dummy.New(&dummy.Config{NetNS: h})
	if err != nil {
		k.Close()
		return nil, err
	}
	k.closers = append(k.closers, lc.Close)
	sc, err := sysctl.New(&sysctl.Config{NetNS: h})
	if err != nil {
		k.Close()
		return nil, err
	}
	k.closers = append(k.closers, sc.Close)
	var rules proxier.Rules
	switch backend {
	case proxier.IPTables:
		r, err := iptables.NewIPTables(&iptables.IPTablesConfig{NetNS: h, Family: iptables.IPv4,
			Flavor: iptables.FlavorNFT, KubeProxyNames: true})
		if err != nil {
			k.Close()
			return nil, err
		}
		k.closers = append(k.closers, r.Close)
		rules = r
	default:
		r, err := iptables.NewNFTables(&iptables.NFTablesConfig{NetNS: h, Family: iptables.IPv4, KubeProxyNames: true})
		if err != nil {
			k.Close()
			return nil, err
		}
		k.closers = append(k.closers, r.Close)
		rules = r
	}
	k.P, err = proxier.New(&proxier.Config{KubeProxyNames: true, Backend: backend},
		proxier.Deps{IPVS: ic, Link: lc, Sysctls: sc, Rules: map[proxier.Family]proxier.Rules{proxier.IPv4: rules}})
	if err != nil {
		k.Close()
		return nil, err
	}
	return k, nil
}

// Close closes the clients (not the namespace).
func (k *IPVSKit) Close() error {
	var errs []error
	for _, c := range k.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}
