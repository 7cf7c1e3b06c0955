package proxier_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"

	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// Before taking over a node kube-proxy configured, an operator previews
// what the take-over changes. Here kube-proxy (IPVS mode) gave the cluster
// IP of a Service with internalTrafficPolicy Local and no local endpoint
// its cluster-wide endpoint; the State gives it none, so the preview shows
// that destination going to weight 0, and nothing else. Nothing changes
// until Sync.
func ExampleProxier_PreviewTakeover() {
	ctx := context.Background()
	vip, key := netip.MustParseAddr("10.96.0.10"), ipvs.ServiceKey{Protocol: ipvs.TCP, Addr: netip.MustParseAddr("10.96.0.10"), Port: 80}
	// The node as kube-proxy left it.
	ipvsFake, link := ipvstest.New(), dummytest.New()
	_ = ipvsFake.AddService(ctx, ipvs.Service{Family: inet.IPv4, Protocol: ipvs.TCP, Addr: vip, Port: 80, Scheduler: "rr"})
	_ = ipvsFake.AddDestination(ctx, key, ipvs.Destination{Addr: netip.MustParseAddr("10.244.1.5"), Port: 8080, Forward: ipvs.Masq, Weight: 1})
	_ = link.AddLinkAlias("kube-ipvs0", "dummy", "")
	_ = link.AddAddr("kube-ipvs0", netip.PrefixFrom(vip, 32))

	p, err := proxier.New(&proxier.Config{KubeProxyNames: true, AdoptKubeProxy: true}, proxier.Deps{
		IPVS: ipvsFake, Link: link, Sysctls: sysctltest.New(""),
		Rules: map[proxier.Family]proxier.Rules{proxier.IPv4: iptablestest.New(iptables.IPv4)},
	})
	if err != nil {
		panic(err)
	}
	state := proxier.State{Services: map[string]proxier.Service{"default/web": {
		ClusterIPs:            []netip.Addr{vip},
		Ports:                 []proxier.Port{{Name: "http", Protocol: proxier.TCP, Port: 80, TargetPort: 8080}},
		InternalTrafficPolicy: proxier.Local,
		Endpoints:             []proxier.Endpoint{{Addr: netip.MustParseAddr("10.244.1.5"), Ready: true}}, // on another node
	}}}
	preview, err := p.PreviewTakeover(ctx, &state)
	if err != nil {
		panic(err)
	}
	_, _ = preview.WriteTo(os.Stdout)
	fmt.Println("empty:", preview.Empty())
	// Output:
	// take-over preview: 1 change to what kube-proxy programmed
	// service default/web:
	//   destination 10.244.1.5:8080 of tcp 10.96.0.10:80 (ClusterIP http): weight 1 -> 0 (no new connections)
	// rewritten, same meaning:
	//   IPv4: kube-proxy's chains, jump rules and sets replaced by marked equivalents (sets not compared)
	//   link kube-ipvs0: marked as the Proxier's (its addresses and flags stay)
	// empty: false
}
