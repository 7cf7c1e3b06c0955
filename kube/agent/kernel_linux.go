package agent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/internal/names"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/sysctl"
)

// Kernel holds the real kernel clients of one network namespace, for
// Options.NewProxier, SetTimeouts and NodeAddresses.
type Kernel struct {
	ns      netns.NsHandle
	ipvs    *ipvs.Client
	closers []func() error
	link    string
}

// OpenKernel opens the IPVS client of ns (zero: this thread's namespace);
// NewProxier opens the rest.
func OpenKernel(ns netns.NsHandle) (*Kernel, error) {
	c, err := ipvs.New(&ipvs.Config{NetNS: ns})
	if err != nil {
		return nil, err
	}
	return &Kernel{ns: ns, ipvs: c, closers: []func() error{c.Close}}, nil
}

// NewProxier opens the link, sysctl, conntrack and netfilter clients cfg
// asks for and makes the Proxier.
func (k *Kernel) NewProxier(cfg *proxier.Config) (*proxier.Proxier, error) {
	instance := cfg.Instance
	if instance == "" {
		instance = proxier.DefaultInstance
	}
	k.link = cfg.LinkName
	if k.link == "" {
		k.link = instance + "0"
		if cfg.KubeProxyNames {
			k.link = "kube-ipvs0"
		}
	}
	link, err := dummy.New(&dummy.Config{NetNS: k.ns, Owner: names.Mark(instance)})
	if err != nil {
		return nil, err
	}
	k.closers = append(k.closers, link.Close)
	sys, err := sysctl.New(&sysctl.Config{NetNS: k.ns})
	if err != nil {
		return nil, err
	}
	k.closers = append(k.closers, sys.Close)
	ct, err := conntrack.New(&conntrack.Config{NetNS: k.ns})
	if err != nil {
		return nil, err
	}
	k.closers = append(k.closers, ct.Close)
	deps := proxier.Deps{IPVS: k.ipvs, Link: link, Sysctls: sys, Conntrack: ct, Rules: map[proxier.Family]proxier.Rules{}}
	fams := cfg.Families
	if len(fams) == 0 {
		fams = []proxier.Family{proxier.IPv4}
	}
	for _, fam := range fams {
		var r interface {
			proxier.Rules
			Close() error
		}
		if cfg.Backend == proxier.IPTables {
			r, err = iptables.NewIPTables(&iptables.IPTablesConfig{NetNS: k.ns, Family: fam, Instance: cfg.Instance,
				KubeProxyNames: cfg.KubeProxyNames, AdoptKubeProxy: cfg.AdoptKubeProxy})
		} else {
			r, err = iptables.NewNFTables(&iptables.NFTablesConfig{NetNS: k.ns, Family: fam, Instance: cfg.Instance,
				KubeProxyNames: cfg.KubeProxyNames})
		}
		if err != nil {
			return nil, fmt.Errorf("%v netfilter back end: %w", fam, err)
		}
		k.closers = append(k.closers, r.Close)
		deps.Rules[fam] = r
	}
	return proxier.New(cfg, deps)
}

// SetTimeouts sets the namespace's IPVS connection timeouts.
func (k *Kernel) SetTimeouts(ctx context.Context, t ipvs.Timeouts) error {
	return k.ipvs.SetTimeouts(ctx, t)
}

// NodeAddresses are the namespace's global unicast addresses, but those on
// the VIP link (known once NewProxier ran): where node ports are served.
func (k *Kernel) NodeAddresses() ([]netip.Addr, error) {
	var h *netlink.Handle
	var err error
	if k.ns == 0 {
		h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
	} else {
		h, err = netlink.NewHandleAt(k.ns, unix.NETLINK_ROUTE)
	}
	if err != nil {
		return nil, err
	}
	defer h.Close()
	vip := -1
	if l, err := h.LinkByName(k.link); err == nil {
		vip = l.Attrs().Index
	}
	addrs, err := h.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if ok && a.LinkIndex != vip && ip.Unmap().IsGlobalUnicast() {
			out = append(out, ip.Unmap())
		}
	}
	return out, nil
}

// Close closes every client.
func (k *Kernel) Close() error {
	var errs []error
	for i := len(k.closers) - 1; i >= 0; i-- {
		errs = append(errs, k.closers[i]())
	}
	return errors.Join(errs...)
}
