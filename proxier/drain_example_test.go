package proxier_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// An endpoint that leaves a TCP service drains at weight 0 while it has
// connections, and Drain, on the caller's own timer (in a real program a
// time.Ticker, with Sync on its own events), deletes it once it has none.
func ExampleProxier_Drain() {
	ctx := context.Background()
	ipvsFake := ipvstest.New()
	p, err := proxier.New(nil, proxier.Deps{
		IPVS: ipvsFake, Link: dummytest.New(), Sysctls: sysctltest.New(""),
		Rules: map[proxier.Family]proxier.Rules{proxier.IPv4: iptablestest.New(iptables.IPv4)},
	})
	if err != nil {
		panic(err)
	}
	ep1, ep2 := netip.MustParseAddr("198.18.1.1"), netip.MustParseAddr("198.18.1.2")
	web := proxier.Service{
		ClusterIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1")},
		Ports:      []proxier.Port{{Name: "http", Protocol: proxier.TCP, Port: 80, TargetPort: 8080}},
		Endpoints:  []proxier.Endpoint{{Addr: ep1, Ready: true}, {Addr: ep2, Ready: true}},
	}
	state := proxier.State{Services: map[string]proxier.Service{"default/web": web}}
	if _, err := p.Sync(ctx, &state); err != nil {
		panic(err)
	}
	web.Endpoints = web.Endpoints[:1] // ep2 goes
	state.Services["default/web"] = web
	res, err := p.Sync(ctx, &state)
	if err != nil {
		panic(err)
	}
	fmt.Print(ipvsFake.Dump())
	fmt.Println("draining:", res.Draining)

	// One connection is still open on ep2 (the fake says so).
	vs := ipvs.Service{Protocol: ipvs.TCP, Addr: netip.MustParseAddr("198.18.100.1"), Port: 80}.Key()
	ipvsFake.SetConns(vs, ipvs.DestinationKey{Addr: ep2, Port: 8080}, 1, 0, 0)
	d, err := p.Drain(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("ended:", len(d.Ended), "draining:", d.Draining)

	// It closed.
	ipvsFake.SetConns(vs, ipvs.DestinationKey{Addr: ep2, Port: 8080}, 0, 0, 0)
	if d, err = p.Drain(ctx); err != nil {
		panic(err)
	}
	for _, e := range d.Ended {
		fmt.Println("ended:", e.Destination, e.Reason)
	}
	fmt.Print(ipvsFake.Dump())
	// Output:
	// -A -t 198.18.100.1:80 -s rr
	// -a -t 198.18.100.1:80 -r 198.18.1.1:8080 -m -w 1
	// -a -t 198.18.100.1:80 -r 198.18.1.2:8080 -m -w 0
	// draining: 1
	// ended: 0 draining: 1
	// ended: 198.18.1.2:8080 idle
	// -A -t 198.18.100.1:80 -s rr
	// -a -t 198.18.100.1:80 -r 198.18.1.1:8080 -m -w 1
}
