package proxier_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// A Proxier over the packages' fakes, as a user's unit test would build it:
// the first Sync creates the service; a second one with an endpoint more
// costs one request.
func Example() {
	ctx := context.Background()
	ipvsFake := ipvstest.New()
	p, err := proxier.New(nil, proxier.Deps{
		IPVS: ipvsFake, Link: dummytest.New(), Sysctls: sysctltest.New(""),
		Rules: map[proxier.Family]proxier.Rules{proxier.IPv4: iptablestest.New(iptables.IPv4)},
	})
	if err != nil {
		panic(err)
	}
	web := proxier.Service{
		ClusterIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1")},
		Ports:      []proxier.Port{{Name: "http", Protocol: proxier.TCP, Port: 80, TargetPort: 8080}},
		Endpoints:  []proxier.Endpoint{{Addr: netip.MustParseAddr("198.18.1.1"), Ready: true}},
	}
	state := proxier.State{Services: map[string]proxier.Service{"default/web": web}}
	if _, err := p.Sync(ctx, &state); err != nil {
		panic(err)
	}
	fmt.Print(ipvsFake.Dump())

	web.Endpoints = append(web.Endpoints, proxier.Endpoint{Addr: netip.MustParseAddr("198.18.1.2"), Ready: true})
	state.Services["default/web"] = web
	res, err := p.Sync(ctx, &state)
	if err != nil {
		panic(err)
	}
	fmt.Println("requests:", res.Plan.IPVSAdd.Len()+res.Plan.IPVSDelete.Len())
	// Output:
	// -A -t 198.18.100.1:80 -s rr
	// -a -t 198.18.100.1:80 -r 198.18.1.1:8080 -m -w 1
	// requests: 1
}

// Validation names every problem and applies nothing.
func ExampleState_Validate() {
	state := proxier.State{Services: map[string]proxier.Service{
		"web": {Ports: []proxier.Port{{Name: "http", Protocol: proxier.TCP, Port: 80}, {Name: "admin", Protocol: inet.ICMP, Port: 8080, NodePort: 70000}}},
	}}
	fmt.Println(state.Validate(&proxier.Config{}))
	// Output:
	// proxier: invalid state (2 problems):
	//   services["web"].ports[1].protocol: icmp is not TCP, UDP or SCTP
	//   services["web"].ports[1].nodePort: 70000 out of range 0-65535
}

// Something else deleted a virtual server and unbound its VIP: Reconcile,
// called on the caller's timer, reports and repairs it; a second one finds
// nothing.
func ExampleProxier_Reconcile() {
	ctx := context.Background()
	ipvsFake, link := ipvstest.New(), dummytest.New()
	p, err := proxier.New(nil, proxier.Deps{
		IPVS: ipvsFake, Link: link, Sysctls: sysctltest.New(""),
		Rules: map[proxier.Family]proxier.Rules{proxier.IPv4: iptablestest.New(iptables.IPv4)},
	})
	if err != nil {
		panic(err)
	}
	vip := netip.MustParseAddr("198.18.100.1")
	state := proxier.State{Services: map[string]proxier.Service{"default/web": {
		ClusterIPs: []netip.Addr{vip},
		Ports:      []proxier.Port{{Name: "http", Protocol: proxier.TCP, Port: 80, TargetPort: 8080}},
		Endpoints:  []proxier.Endpoint{{Addr: netip.MustParseAddr("198.18.1.1"), Ready: true}},
	}}}
	if _, err := p.Sync(ctx, &state); err != nil {
		panic(err)
	}
	// The tampering, as ipvsadm -D and ip addr del would do it.
	ipvsFake.DeleteService(ctx, ipvs.ServiceKey{Protocol: ipvs.TCP, Addr: vip, Port: 80})
	link.Unbind(ctx, proxier.DefaultLinkName, vip)

	rep, err := p.Reconcile(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Print(rep)
	fmt.Print(ipvsFake.Dump())
	rep, _ = p.Reconcile(ctx)
	fmt.Println("drift after the repair:", len(rep.Drift))
	// Output:
	// ipvs: virtual server tcp 198.18.100.1:80: missing
	// addresses: address 198.18.100.1 on ipvskit0: missing
	// -A -t 198.18.100.1:80 -s rr
	// -a -t 198.18.100.1:80 -r 198.18.1.1:8080 -m -w 1
	// drift after the repair: 0
}
