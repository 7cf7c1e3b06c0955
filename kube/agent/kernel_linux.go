package agent

import (
	"context"
	"errors"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/ipvskit/ipvskit/internal/nsfd"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
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

// NewProxier opens the Proxier cfg asks for in the namespace, with every
// client it needs (proxier.Open); Close closes them.
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
	// Open only checks ctx between clients; Options.NewProxier has none.
	p, err := proxier.Open(context.Background(), cfg, k.ns)
	if err != nil {
		return nil, err
	}
	k.closers = append(k.closers, p.Close)
	return p, nil
}

// SetTimeouts sets the namespace's IPVS connection timeouts.
func (k *Kernel) SetTimeouts(ctx context.Context, t ipvs.Timeouts) error {
	return k.ipvs.SetTimeouts(ctx, t)
}

// Listen is net.Listen inside the namespace, for Options.Listen: the
// agent's health-check node ports then listen on the node that the kernel
// clients program. The listener stays in the namespace wherever it is used.
func (k *Kernel) Listen(network, address string) (net.Listener, error) {
	if k.ns == 0 {
		return net.Listen(network, address)
	}
	var l net.Listener
	err := nsfd.Do(int(k.ns), func() (err error) {
		l, err = net.Listen(network, address)
		return err
	})
	return l, err
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
