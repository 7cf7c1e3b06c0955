// Package proxierbench measures the proxier on the running kernel: its
// initial sync against the raw ipvs batch that creates the same virtual
// servers, the cost of small changes, a no-op sync, and, as the peer, a
// kube-proxy-style sync of the same services with github.com/moby/ipvs.
package proxierbench

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"time"

	moby "github.com/moby/ipvs"

	ipvsbench "github.com/ipvskit/ipvskit/bench/ipvs"
	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/sysctl"
)

// Shape is the size of the benchmark's state.
type Shape struct{ Services, Endpoints int }

// addr is the i-th address counted from base.
func addr(base netip.Addr, i int) netip.Addr {
	b := base.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(i)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

var (
	vipBase = netip.MustParseAddr("198.19.0.1") // cluster IPs, up to MaxServices in 198.19.0.0/16
	epBase  = netip.MustParseAddr("198.18.0.1") // endpoints, in 198.18.0.0/16
)

// MaxServices is the largest shape whose VIPs fit in 198.19.0.0/16.
const MaxServices = 65000

// epAddrs is how many endpoint addresses 198.18.0.0/16 holds (without .0.0
// and the broadcast-looking .255.255).
const epAddrs = 65534

func (s Shape) vip(i int) netip.Addr { return addr(vipBase, i) }

// ep is endpoint j of service i. Endpoints count on across services and
// wrap around within 198.18.0.0/16 (500,000 endpoints do not fit in the
// benchmark range), so services far apart share addresses as pods backing
// several services do; within a service they are distinct.
func (s Shape) ep(i, j int) netip.Addr {
	return addr(epBase, (i*s.Endpoints+j)%epAddrs)
}

// State is the proxier's state for the shape: one ClusterIP TCP service per
// index with Endpoints ready endpoints each (port 80 -> 8080).
func (s Shape) State() *proxier.State {
	st := &proxier.State{Services: make(map[string]proxier.Service, s.Services)}
	for i := range s.Services {
		eps := make([]proxier.Endpoint, s.Endpoints)
		for j := range eps {
			eps[j] = proxier.Endpoint{Addr: s.ep(i, j), Ready: true}
		}
		st.Services[fmt.Sprintf("svc-%d", i)] = proxier.Service{
			ClusterIPs: []netip.Addr{s.vip(i)},
			Ports:      []proxier.Port{{Name: "http", Protocol: proxier.TCP, Port: 80, TargetPort: 8080}},
			Endpoints:  eps,
		}
	}
	return st
}

// RawBatch is the ipvs batch creating the same virtual servers and
// destinations as the proxier's first sync.
func (s Shape) RawBatch() *ipvs.Batch {
	var b ipvs.Batch
	for i := range s.Services {
		svc := ipvs.Service{Protocol: ipvs.TCP, Addr: s.vip(i), Port: 80, Scheduler: "rr"}
		b.AddService(svc)
		for j := range s.Endpoints {
			b.AddDestination(svc.Key(), ipvs.Destination{Addr: s.ep(i, j), Port: 8080, Forward: ipvs.Masq, Weight: 1})
		}
	}
	return &b
}

// Node is a proxier with real clients in a fresh namespace.
type Node struct {
	NS      *ipvsbench.NetNS
	P       *proxier.Proxier
	closers []func() error
}

// NewNode opens the clients (nftables back end) in a fresh namespace.
func NewNode() (*Node, error) { return NewNodeWith(proxier.NFTables, proxier.VIPAddresses) }

// NewNodeWith opens the clients in a fresh namespace with the given
// netfilter back end (the iptables one pinned to iptables-nft, as
// kube-proxy runs on Debian) and VIP mode.
func NewNodeWith(backend proxier.Backend, mode proxier.VIPMode) (*Node, error) {
	ns, err := ipvsbench.NewNetNS()
	if err != nil {
		return nil, err
	}
	n := &Node{NS: ns}
	h := ns.Handle()
	ic, err := ipvs.New(&ipvs.Config{NetNS: h})
	if err != nil {
		n.Close()
		return nil, err
	}
	n.closers = append(n.closers, ic.Close)
	lc, err := dummy.New(&dummy.Config{NetNS: h})
	if err != nil {
		n.Close()
		return nil, err
	}
	n.closers = append(n.closers, lc.Close)
	sc, err := sysctl.New(&sysctl.Config{NetNS: h})
	if err != nil {
		n.Close()
		return nil, err
	}
	n.closers = append(n.closers, sc.Close)
	var rc proxier.Rules
	switch backend {
	case proxier.IPTables:
		r, err := iptables.NewIPTables(&iptables.IPTablesConfig{NetNS: h, Flavor: iptables.FlavorNFT})
		if err != nil {
			n.Close()
			return nil, err
		}
		n.closers = append(n.closers, r.Close)
		rc = r
	default:
		r, err := iptables.NewNFTables(&iptables.NFTablesConfig{NetNS: h})
		if err != nil {
			n.Close()
			return nil, err
		}
		n.closers = append(n.closers, r.Close)
		rc = r
	}
	n.P, err = proxier.New(&proxier.Config{Backend: backend, VIPMode: mode}, proxier.Deps{IPVS: ic, Link: lc, Sysctls: sc,
		Rules: map[proxier.Family]proxier.Rules{proxier.IPv4: rc}})
	if err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// Close closes the clients and the namespace.
func (n *Node) Close() {
	for _, c := range n.closers {
		c()
	}
	n.NS.Close()
}

// Timed runs f and returns how long it took.
func Timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// RawCreate applies the raw batch in a fresh namespace and times it.
func RawCreate(s Shape) (time.Duration, error) {
	ns, err := ipvsbench.NewNetNS()
	if err != nil {
		return 0, err
	}
	defer ns.Close()
	c, err := ipvs.New(&ipvs.Config{NetNS: ns.Handle()})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	b := s.RawBatch()
	return Timed(func() error { return c.Apply(context.Background(), b) })
}

// KubeProxySync does in a fresh-or-given namespace what kube-proxy's IPVS
// mode does per sync with moby/ipvs (reference section 1): for every VIP a
// GetService (create it if missing), a second GetService and a destination
// dump (add the missing destinations), then one full dump of the table.
func KubeProxySync(h *moby.Handle, s Shape) error {
	for i := range s.Services {
		svc := &moby.Service{Address: s.vip(i).AsSlice(), Protocol: 6, Port: 80, AddressFamily: 2, SchedName: "rr", Netmask: 0xffffffff}
		if _, err := h.GetService(svc); err != nil {
			if err := h.NewService(svc); err != nil {
				return fmt.Errorf("new service %v: %w", s.vip(i), err)
			}
		}
		if _, err := h.GetService(svc); err != nil {
			return err
		}
		have, err := h.GetDestinations(svc)
		if err != nil {
			return err
		}
		existing := map[string]bool{}
		for _, d := range have {
			existing[d.Address.String()] = true
		}
		for j := range s.Endpoints {
			a := s.ep(i, j)
			if existing[a.String()] {
				continue
			}
			d := &moby.Destination{Address: a.AsSlice(), Port: 8080, Weight: 1, ConnectionFlags: moby.ConnectionFlagMasq, AddressFamily: 2}
			if err := h.NewDestination(svc, d); err != nil {
				return fmt.Errorf("new destination %v: %w", a, err)
			}
		}
	}
	_, err := h.GetServices()
	return err
}

// IPBatchVIPs binds the shape's VIPs on a fresh dummy link with one
// `ip -batch` (iproute2, run in a fresh namespace through nsenter) and times
// that one command: what binding the VIPs costs the kernel whoever asks.
func IPBatchVIPs(s Shape) (time.Duration, error) {
	vips := make([]netip.Addr, s.Services)
	for i := range vips {
		vips[i] = s.vip(i)
	}
	return IPBatchAddrs(vips)
}

// IPBatchAddrs binds addrs as host addresses (/32) on a fresh dummy link
// with one `ip -batch` of `address add` lines, and times that command: the
// kernel's limit for VIPAddresses.
func IPBatchAddrs(addrs []netip.Addr) (time.Duration, error) {
	var b strings.Builder
	for _, a := range addrs {
		fmt.Fprintf(&b, "address add %s/32 dev kube-ipvs0\n", a)
	}
	return ipBatch(b.String())
}

// IPBatchRoutes adds, for each of addrs, a route of type local in the local
// table through a fresh dummy link, with one `ip -batch` of `route add local
// X/32 dev L table local` lines, and times that command: the kernel's limit
// for VIPLocalRoutes.
func IPBatchRoutes(addrs []netip.Addr) (time.Duration, error) {
	var b strings.Builder
	for _, a := range addrs {
		fmt.Fprintf(&b, "route add local %s/32 dev kube-ipvs0 table local\n", a)
	}
	return ipBatch(b.String())
}

// ipBatch makes a dummy link kube-ipvs0 in a fresh namespace, untimed, then
// runs `ip -batch -` of lines there and times it.
func ipBatch(lines string) (time.Duration, error) {
	ns, err := ipvsbench.NewNetNS()
	if err != nil {
		return 0, err
	}
	defer ns.Close()
	in := func(stdin string, args ...string) error {
		cmd := exec.Command("nsenter", append([]string{"--net=" + ns.Path(), "ip"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %.500s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := in("", "link", "add", "kube-ipvs0", "type", "dummy"); err != nil {
		return 0, err
	}
	return Timed(func() error { return in(lines, "-batch", "-") })
}

// DummyBind binds addrs on a fresh dummy link with one dummy.Client.Update
// in a fresh namespace and times that call: the library's own raw batch for
// VIPAddresses, without the proxier around it.
func DummyBind(addrs []netip.Addr) (time.Duration, error) {
	ns, err := ipvsbench.NewNetNS()
	if err != nil {
		return 0, err
	}
	defer ns.Close()
	c, err := dummy.New(&dummy.Config{NetNS: ns.Handle()})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Ensure(ctx, "ipvskit0"); err != nil {
		return 0, err
	}
	return Timed(func() error { return c.Update(ctx, "ipvskit0", addrs, nil) })
}

// RawApply applies b with one ipvs.Client.Apply in a fresh namespace and
// times it: the kernel's limit for the IPVS phase when b is the plan's
// batch.
func RawApply(b *ipvs.Batch) (time.Duration, error) {
	ns, err := ipvsbench.NewNetNS()
	if err != nil {
		return 0, err
	}
	defer ns.Close()
	c, err := ipvs.New(&ipvs.Config{NetNS: ns.Handle()})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return Timed(func() error { return c.Apply(context.Background(), b) })
}

// NFTScript loads, with one `nft -f` in a fresh namespace, the nftables
// script of the rules the proxier's first sync of the shape applies, and
// times it: the reference tool for the rules phase.
func NFTScript(s Shape) (time.Duration, error) {
	n, err := NewNode()
	if err != nil {
		return 0, err
	}
	defer n.Close()
	pl, err := n.P.Plan(s.State())
	if err != nil {
		return 0, err
	}
	text, err := iptables.RenderNFT(pl.Rules[proxier.IPv4], iptables.DefaultTable)
	if err != nil {
		return 0, err
	}
	cmd := exec.Command("nsenter", "--net="+n.NS.Path(), "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(text)
	return Timed(func() error {
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("nft -f: %w: %s", err, out)
		}
		return nil
	})
}
